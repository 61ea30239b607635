/* Preconditioner set-up and dispatch; Jacobi and the user callback live
 * here, the factorized ones in precond_fact.c (SSOR, IC(0), ILU(0)) and precond_ilut.c (ILUT), AMG
 * in src/backends/hypre_amg.c (hypre) and precond_saamg.c (sla's own). */
#include "krylov.h"

#include <math.h>

static sla_status jacobi_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                               int nt)
{
    (void)transpose; /* diagonal: M^T = M */
    const double *d = pc->dinv;
    sla_int n = pc->n;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) z[i] = d[i] * r[i]; /* z = D^-1 r */
    return SLA_OK;
}

static sla_status user_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                             int nt)
{
    (void)nt;
    sla_status st = (transpose && pc->user.apply_transpose)
                        ? pc->user.apply_transpose(pc->user.user, pc->n, r, z)
                        : pc->user.apply(pc->user.user, pc->n, r, z);
    return st == SLA_OK ? SLA_OK : SLA_ERR_CALLBACK;
}

static sla_status jacobi_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    pc->dinv = sla__malloc(&pc->alloc, (size_t)pc->n, sizeof *pc->dinv);
    if (!pc->dinv)
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the Jacobi preconditioner");
    for (sla_int i = 0; i < pc->n; i++) {
        sla_int p = sla__find(A, i, i);
        double d = p >= 0 ? sla__val(A, ib, p) : 0.0;
        if (d == 0.0)
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "Jacobi preconditioner: zero or missing diagonal at row %lld",
                              (long long)i);
        pc->dinv[i] = 1.0 / d;
    }
    pc->apply = jacobi_apply;
    return SLA_OK;
}

sla_status sla__pc_create(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A, sla_int ib,
                          const sla_solver_options *opts, sla__pc **out)
{
    *out = NULL;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__pc *pc = sla__calloc(&a, 1, sizeof *pc);
    if (!pc) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a preconditioner");
    pc->kind = kind;
    pc->n = A->nrows;
    pc->alloc = a;
    pc->shift = opts->ilu_shift != 0;
    sla_status st = SLA_OK;
    switch (kind) {
    case SLA_PRECOND_NONE: break;
    case SLA_PRECOND_JACOBI: st = jacobi_setup(ctx, A, ib, pc); break;
    case SLA_PRECOND_SSOR: st = sla__ssor_setup(ctx, A, ib, opts->omega, pc); break;
    case SLA_PRECOND_IC0: st = sla__ic0_setup(ctx, A, ib, pc); break;
    case SLA_PRECOND_ILU0: st = sla__ilu0_setup(ctx, A, ib, pc); break;
    case SLA_PRECOND_AMG: st = sla__amg_setup(ctx, A, ib, &opts->amg, pc); break;
    case SLA_PRECOND_SAAMG:
        st = sla__saamg_setup(ctx, A, ib, opts->saamg_reuse, opts->saamg_smoother, opts->saamg_theta, pc);
        break;
    case SLA_PRECOND_ILUT:
        st = sla__ilut_setup(ctx, A, ib, opts->ilut_droptol, opts->ilut_fill, opts->ilut_pivot,
                             pc);
        break;
    case SLA_PRECOND_USER:
        if (!opts->user_precond.apply) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT,
                            "precond=user needs options.user_precond.apply");
            break;
        }
        pc->user = opts->user_precond;
        pc->apply = user_apply;
        break;
    default: st = sla__error(ctx, SLA_ERR_ARGUMENT, "unknown preconditioner %d", (int)kind);
    }
    if (st != SLA_OK) {
        sla__pc_destroy(&pc);
        return st;
    }
    *out = pc;
    return SLA_OK;
}

sla_status sla__pc_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt)
{
    if (!pc || !pc->apply) {
        sla__copy(pc ? pc->n : 0, r, z);
        return SLA_OK;
    }
    return pc->apply(pc, transpose, r, z, nt);
}

void sla__pc_destroy(sla__pc **pc)
{
    if (!pc || !*pc) return;
    sla__pc *p = *pc;
    sla_allocator a = p->alloc;
    if (p->destroy) p->destroy(p);
    sla__free(&a, p->dinv);
    sla__free(&a, p);
    *pc = NULL;
}
