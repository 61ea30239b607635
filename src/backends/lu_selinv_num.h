/* Template of the numeric half of the LU selected inversion over a scalar
 * type. lu_selinv_num.c includes it twice, with
 *     SEL_T        the scalar (double, sla__z)
 *     SEL_FN(x)    x with the type's suffix (x##_d, x##_z)
 *     SEL_GEMM, SEL_TRSM   the BLAS routines (dgemm_/dtrsm_, zgemm_/ztrsm_)
 *     SEL_ABS      |x| (fabs, cabs), SEL_FINITE(x) both parts finite
 *     SEL_LX, SEL_UX, SEL_DX   f's value arrays of that type
 * The recurrences, the supernodal blocks and their derivation are in
 * lu_selinv.c's header comment; no conjugation appears anywhere (Z =
 * (L U)^-1 in the field of the values), so the complex instance is the
 * real algorithm in complex arithmetic. No include guard: a template. */

/* The factor's values on F: fLx (L by columns), uRx (U1 = D^-1 U by rows). */
static sla_status SEL_FN(values)(sla_ctx *ctx, const sla__lu_factors *f, const sla__selinv_pat *p, SEL_T *fLx,
                                 SEL_T *uRx)
{
    const sla_int n = p->n;
    const SEL_T *Lx = SEL_LX(f), *Ux = SEL_UX(f), *Dx = SEL_DX(f);
    for (sla_int q = 0; q < n; q++)
        if (Dx[q] == 0.0 || !SEL_FINITE(Dx[q]))
            return sla__error(ctx, SLA_ERR_SINGULAR, "LU selected inverse: pivot %lld of U has magnitude %g "
                              "(the matrix is singular)", (long long)q, SEL_ABS(Dx[q]));
    for (size_t s = 0; s < p->nL; s++) fLx[s] = 0.0;
    for (size_t s = 0; s < p->nU; s++) uRx[s] = 0.0;
    for (sla_int s = 0; s < f->Lp[n]; s++)
        if (p->lmap[s] >= 0) fLx[p->lmap[s]] = Lx[s];
    for (sla_int s = 0; s < f->Up[n]; s++)
        if (p->umap[s] >= 0) uRx[p->umap[s]] = Ux[s] / Dx[f->Ui[s]];
    return SLA_OK;
}

/* The recurrences (1)-(3) per pivot, p = n-1 down to 0, on Z = ZL | ZU | Zd. */
static sla_status SEL_FN(recurrences)(sla_ctx *ctx, const sla__lu_factors *f, const sla__selinv_pat *pt,
                                      const SEL_T *fLx, const SEL_T *uRx, SEL_T *Z)
{
    const sla_int n = pt->n;
    const sla_int *fLp = pt->fLp, *fLi = pt->fLi, *uRp = pt->uRp, *uRj = pt->uRj;
    const SEL_T *Dx = SEL_DX(f);
    SEL_T *ZL = Z, *ZU = Z + pt->nL, *Zd = Z + pt->nL + pt->nU;
    SEL_T *accL = sla__malloc(&pt->a, (size_t)n, sizeof *accL), *accU = sla__malloc(&pt->a, (size_t)n, sizeof *accU);
    if (!accL || !accU) {
        sla__free(&pt->a, accL);
        sla__free(&pt->a, accU);
        return sla__error(ctx, SLA_ERR_NOMEM, "LU selected inverse: out of memory (accumulators)");
    }
    sla_int *posL = pt->pos, *posU = pt->pos2;
    for (sla_int p = n - 1; p >= 0; p--) {
        const sla_int l0 = fLp[p], nl = fLp[p + 1] - l0, u0 = uRp[p], nu = uRp[p + 1] - u0;
        const SEL_T *lv = fLx + l0, *uv = uRx + u0;
        for (sla_int q = 0; q < nl; q++) posL[fLi[l0 + q]] = q, accL[q] = 0.0;
        for (sla_int t = 0; t < nu; t++) posU[uRj[u0 + t]] = t, accU[t] = 0.0;
        /* the block Z[Urow(p), Lcol(p)]: entries Z[k, j] with k < j lie in
         * ZL's column k, those with k > j in ZU's row j, k = j in Zd */
        for (sla_int t = 0; t < nu; t++) {
            const sla_int k = uRj[u0 + t];
            const SEL_T uk = uv[t];
            SEL_T su = 0.0;
            for (sla_int s = fLp[k]; s < fLp[k + 1]; s++) {
                sla_int q = posL[fLi[s]];
                if (q >= 0) {
                    accL[q] += uk * ZL[s];
                    su += ZL[s] * lv[q];
                }
            }
            sla_int q = posL[k];
            if (q >= 0) {
                accL[q] += uk * Zd[k];
                su += Zd[k] * lv[q];
            }
            accU[t] += su;
        }
        for (sla_int q = 0; q < nl; q++) {
            const sla_int j = fLi[l0 + q];
            const SEL_T lj = lv[q];
            SEL_T sl = 0.0;
            for (sla_int s = uRp[j]; s < uRp[j + 1]; s++) {
                sla_int t = posU[uRj[s]];
                if (t >= 0) {
                    sl += uv[t] * ZU[s];
                    accU[t] += ZU[s] * lj;
                }
            }
            accL[q] += sl;
        }
        SEL_T dsum = 0.0;
        for (sla_int q = 0; q < nl; q++) {
            ZL[l0 + q] = -accL[q];
            posL[fLi[l0 + q]] = -1;
        }
        for (sla_int t = 0; t < nu; t++) {
            ZU[u0 + t] = -accU[t];
            dsum += uv[t] * ZU[u0 + t];
            posU[uRj[u0 + t]] = -1;
        }
        Zd[p] = 1.0 / Dx[p] - dsum;
    }
    sla__free(&pt->a, accL);
    sla__free(&pt->a, accU);
    return SLA_OK;
}

#ifdef SLA_HAVE_LAPACK
/* One entry z = Z[R_U[t], R_L[q]] of the block: stored in Zb (dense), or
 * its products added at once: ZJL[:, q] -= U1_JR[:, t] z and
 * ZUt[t, :] -= z L_RJ[q, :] (LRt = L_RJ row-major). */
static inline void SEL_FN(sn_put)(bool dense, SEL_T *Zb, sla_int nu, sla_int t, sla_int q, SEL_T z, sla_int c,
                                  const SEL_T *UJR, const SEL_T *LRt, SEL_T *ZJL, SEL_T *ZUt)
{
    if (dense) {
        Zb[(size_t)q * nu + t] = z;
        return;
    }
    const SEL_T *u = UJR + (size_t)t * c, *l = LRt + (size_t)q * c;
    SEL_T *zl = ZJL + (size_t)q * c, *zu = ZUt + (size_t)t * c;
    for (sla_int r = 0; r < c; r++) {
        zl[r] -= u[r] * z;
        zu[r] -= z * l[r];
    }
}

/* The recurrences by supernodes, with dense blocks. For J = p0..p1-1
 * (c pivots) with R_L (nl rows) and R_U (nu columns), L_JJ unit lower,
 * U1_JJ unit upper, L_RJ = L[R_L, J], U1_JR = U1[J, R_U], Zb = Z[R_U, R_L]
 * (gathered from the supernodes after J, which S holds by closure):
 *     Z[J, R_L] = -U1_JJ^-1 (U1_JR Zb),   Z[R_U, J] = -(Zb L_RJ) L_JJ^-1,
 *     Z[J, J] = U1_JJ^-1 (D_J^-1 L_JJ^-1 - U1_JR Z[R_U, J])
 * (rows J of U1 Z = D^-1 L^-1 and columns J of Z L = U^-1, as (1)-(3)
 * per pivot), into Z at sn->off (lu_selinv.h). */
static sla_status SEL_FN(supernodal)(sla_ctx *ctx, const sla__lu_factors *f, const sla__selinv_pat *sn,
                                     const SEL_T *fLx, const SEL_T *uRx, SEL_T *Z)
{
    const sla_int *fLp = sn->fLp, *fLi = sn->fLi, *uRp = sn->uRp, *uRj = sn->uRj;
    const SEL_T *Dx = SEL_DX(f);
    const sla_allocator *al = &sn->a;
    sla_status st = SLA_OK;
    SEL_T *Lb = sla__malloc(al, sn->maxL, sizeof *Lb), *Ub = sla__malloc(al, sn->maxU, sizeof *Ub);
    SEL_T *Zb = sla__malloc(al, sn->maxB, sizeof *Zb);
    SEL_T *LRt = sla__malloc(al, sn->maxL, sizeof *LRt), *ZUt = sla__malloc(al, sn->maxU, sizeof *ZUt);
    if (!Lb || !Ub || !Zb || !LRt || !ZUt) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "LU selected inverse: out of memory (supernodal blocks)");
        goto done;
    }
    sla_int *posL = sn->pos, *posU = sn->pos2;
    const SEL_T one = 1.0, mone = -1.0, zero = 0.0;
    for (sla_int J = sn->ns - 1; J >= 0 && !st; J--) {
        const sla_int p0 = sn->super[J], p1 = sn->super[J + 1], c = p1 - p0;
        const sla_int nl = SLA_SN_NL(sn, J), nu = SLA_SN_NU(sn, J), ldl = c + nl;
        const sla_int *RL = SLA_SN_RL(sn, J), *RU = SLA_SN_RU(sn, J);
        SEL_T *ZJJ = Z + sn->off[J], *ZJL = ZJJ + (size_t)c * c, *ZUJ = ZJL + (size_t)c * nl;
        for (sla_int q = 0; q < nl; q++) posL[RL[q]] = q;
        for (sla_int t = 0; t < nu; t++) posU[RU[t]] = t;
        /* the dense L[J + R_L, J] and U1[J, J + R_U] */
        memset(Lb, 0, (size_t)ldl * c * sizeof *Lb);
        memset(Ub, 0, (size_t)(c + nu) * c * sizeof *Ub);
        for (sla_int p = p0; p < p1 && !st; p++) {
            const sla_int r = p - p0;
            Lb[(size_t)r * ldl + r] = 1.0;
            Ub[(size_t)r * c + r] = 1.0;
            for (sla_int s = fLp[p]; s < fLp[p + 1]; s++) {
                sla_int i = fLi[s], row = i < p1 ? i - p0 : c + posL[i];
                if (i >= p1 && posL[i] < 0) st = SLA_ERR_ARGUMENT;
                else Lb[(size_t)r * ldl + row] = fLx[s];
            }
            for (sla_int s = uRp[p]; s < uRp[p + 1]; s++) {
                sla_int k = uRj[s], col = k < p1 ? k - p0 : c + posU[k];
                if (k >= p1 && posU[k] < 0) st = SLA_ERR_ARGUMENT;
                else Ub[(size_t)col * c + r] = uRx[s];
            }
        }
        if (st) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: supernode %lld is not nested",
                            (long long)J);
            for (sla_int q = 0; q < nl; q++) posL[RL[q]] = -1;
            for (sla_int t = 0; t < nu; t++) posU[RU[t]] = -1;
            break;
        }
        /* products with Zb first, then the triangular solves: the order of
         * the scalar recurrences (U1_JJ^-1 U1_JR alone can be far larger
         * than Z, and cancel; on nnc1374 that costs 2-3 digits) */
        int ci = (int)c, nli = (int)nl, nui = (int)nu, ldli = (int)ldl;
        const SEL_T *UJR = Ub + (size_t)c * c, *LRJ = Lb + c;
        const bool dense = f->mode == 2 || (f->mode == 0 && c >= SLA_LU_SELINV_DENSE_MIN);
        if (nl > 0 && nu > 0) {
            /* Zb = Z[R_U, R_L] (nu x nl): entries Z[k, j] with j right of
             * k's supernode lie in its ZJL, those in k's supernode in its
             * ZJJ, those below j's supernode in its ZUJ. Dense: gathered,
             * then multiplied by BLAS; small supernodes: each entry goes
             * straight into U1_JR Zb (ZJL) and Zb L_RJ (ZUt, row-major). */
            if (dense) {
                memset(Zb, 0, (size_t)nu * nl * sizeof *Zb);
            } else {
                memset(ZJL, 0, (size_t)c * nl * sizeof *ZJL);
                memset(ZUt, 0, (size_t)nu * c * sizeof *ZUt);
                for (sla_int q = 0; q < nl; q++)
                    for (sla_int r = 0; r < c; r++) LRt[(size_t)q * c + r] = LRJ[(size_t)r * ldl + q];
            }
            for (sla_int t = 0; t < nu; t++) {
                const sla_int k = RU[t], K = sn->sup[k], k0 = sn->super[K], cK = sn->super[K + 1] - k0;
                const sla_int nlK = SLA_SN_NL(sn, K), *RLK = SLA_SN_RL(sn, K);
                const SEL_T *zjj = Z + sn->off[K] + (k - k0), *zjl = zjj + (size_t)cK * cK;
                for (sla_int q = 0; q < nlK; q++) {
                    sla_int qq = posL[RLK[q]];
                    if (qq >= 0) SEL_FN(sn_put)(dense, Zb, nu, t, qq, zjl[(size_t)q * cK], c, UJR, LRt, ZJL, ZUt);
                }
                for (sla_int j = k0; j < k0 + cK; j++) {
                    sla_int qq = posL[j];
                    if (qq >= 0)
                        SEL_FN(sn_put)(dense, Zb, nu, t, qq, zjj[(size_t)(j - k0) * cK], c, UJR, LRt, ZJL, ZUt);
                }
            }
            for (sla_int q = 0; q < nl; q++) {
                const sla_int j = RL[q], K = sn->sup[j], j0 = sn->super[K], cK = sn->super[K + 1] - j0;
                const sla_int nuK = SLA_SN_NU(sn, K), *RUK = SLA_SN_RU(sn, K);
                const SEL_T *zuj = Z + sn->off[K] + (size_t)cK * (cK + SLA_SN_NL(sn, K)) + (size_t)(j - j0) * nuK;
                for (sla_int t = 0; t < nuK; t++) {
                    sla_int tt = posU[RUK[t]];
                    if (tt >= 0) SEL_FN(sn_put)(dense, Zb, nu, tt, q, zuj[t], c, UJR, LRt, ZJL, ZUt);
                }
            }
            if (dense) {
                SEL_GEMM("N", "N", &ci, &nli, &nui, &mone, UJR, &ci, Zb, &nui, &zero, ZJL, &ci, 1, 1);
                SEL_GEMM("N", "N", &nui, &ci, &nli, &mone, Zb, &nui, LRJ, &ldli, &zero, ZUJ, &nui, 1, 1);
            } else {
                for (sla_int t = 0; t < nu; t++)
                    for (sla_int r = 0; r < c; r++) ZUJ[(size_t)r * nu + t] = ZUt[(size_t)t * c + r];
            }
            if (c > 1) { /* unit triangular: nothing to do for one pivot */
                SEL_TRSM("L", "U", "N", "U", &ci, &nli, &one, Ub, &ci, ZJL, &ci, 1, 1, 1, 1);
                SEL_TRSM("R", "L", "N", "U", &nui, &ci, &one, Lb, &ldli, ZUJ, &nui, 1, 1, 1, 1);
            }
        } else {
            memset(ZJL, 0, (size_t)c * nl * sizeof *ZJL);
            memset(ZUJ, 0, (size_t)nu * c * sizeof *ZUJ);
        }
        /* Z[J, J] = U1_JJ^-1 (D_J^-1 L_JJ^-1 - U1_JR Z[R_U, J]) */
        if (c == 1) {
            SEL_T sum = 0.0;
            for (sla_int t = 0; t < nu; t++) sum += UJR[t] * ZUJ[t];
            ZJJ[0] = 1.0 / Dx[p0] - sum;
        } else {
            memset(ZJJ, 0, (size_t)c * c * sizeof *ZJJ);
            for (sla_int r = 0; r < c; r++) ZJJ[(size_t)r * c + r] = 1.0;
            SEL_TRSM("R", "L", "N", "U", &ci, &ci, &one, Lb, &ldli, ZJJ, &ci, 1, 1, 1, 1);
            for (sla_int col = 0; col < c; col++)
                for (sla_int r = 0; r < c; r++) ZJJ[(size_t)col * c + r] /= Dx[p0 + r];
            if (nu > 0)
                SEL_GEMM("N", "N", &ci, &ci, &nui, &mone, UJR, &ci, ZUJ, &nui, &one, ZJJ, &ci, 1, 1);
            SEL_TRSM("L", "U", "N", "U", &ci, &ci, &one, Ub, &ci, ZJJ, &ci, 1, 1, 1, 1);
        }
        for (sla_int q = 0; q < nl; q++) posL[RL[q]] = -1;
        for (sla_int t = 0; t < nu; t++) posU[RU[t]] = -1;
    }
done:
    sla__free(al, Lb);
    sla__free(al, Ub);
    sla__free(al, Zb);
    sla__free(al, LRt);
    sla__free(al, ZUt);
    return st;
}
#endif

sla_status SEL_FN(sla__selinv_num)(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f,
                                   const sla__selinv_pat *p, SEL_T *z)
{
    sla_status st = SLA_OK;
    const sla_allocator *al = &p->a;
    SEL_T *fLx = sla__malloc(al, p->nL + 1, sizeof *fLx), *uRx = sla__malloc(al, p->nU + 1, sizeof *uRx);
    SEL_T *Z = sla__malloc(al, p->zlen + 1, sizeof *Z);
    if (!fLx || !uRx || !Z) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "LU selected inverse: out of memory (%zu values on the pattern)",
                        p->nL + p->nU + p->zlen);
        goto done;
    }
    if ((st = SEL_FN(values)(ctx, f, p, fLx, uRx))) goto done;
#ifdef SLA_HAVE_LAPACK
    if (p->snodes) st = SEL_FN(supernodal)(ctx, f, p, fLx, uRx, Z);
    else
#endif
        st = SEL_FN(recurrences)(ctx, f, p, fLx, uRx, Z);
    if (st) goto done;
    /* entry k = (i, j) of A: Z[qinv[i], pinv[j]] * rhat[j] */
    for (sla_int k = 0; k < A->nnz; k++) {
        const sla_int j = A->colind[k];
        z[k] = f->rhat ? Z[p->zpos[k]] * f->rhat[j] : Z[p->zpos[k]];
    }
done:
    sla__free(al, fLx);
    sla__free(al, uRx);
    sla__free(al, Z);
    return st;
}
