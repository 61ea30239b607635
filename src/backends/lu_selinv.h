/* Private interface between the two halves of the LU selected inversion.
 * lu_selinv.c builds the pattern (permutations, the closed symbolic pattern F, where the
 * factor's entries go on it, supernodes, where each entry of A is read
 * from); lu_selinv_num.c runs the recurrences on it, once written for a
 * scalar type and compiled for double and complex double. The algebra is
 * in lu_selinv.c's header comment. Never installed. */
#ifndef SLA_LU_SELINV_H
#define SLA_LU_SELINV_H

#include "../solvers/direct.h"

/* Supernodes of at least this many pivots gather the block Z[R_U, R_L]
 * and multiply it by BLAS; smaller ones add each entry's products at once
 * (a gathered block would be read three times for a matrix-vector
 * product). */
#define SLA_LU_SELINV_DENSE_MIN 16

/* The pattern side of a selected inversion. */
typedef struct sla__selinv_pat {
    sla_allocator a;
    sla_int n;
    sla_int *pinv, *qinv;   /* inverse permutations */
    sla_int *pos, *pos2;    /* n entries of work space each, all -1 between uses */
    sla_int *fLp, *fLi;     /* F's strictly lower part by columns: Lcol(p) */
    sla_int *uRp, *uRj;     /* F's strictly upper part by rows, sorted: Urow(p) */
    size_t nL, nU;          /* entries of each */
    sla_int *lmap;          /* factor L entry s (row form) -> its place in fLi; -1: diagonal */
    sla_int *umap;          /* factor U entry s (column form) -> its place in uRj; -1: diagonal */
    /* supernodes of F (snodes; see find_supernodes in lu_selinv.c): ns of
     * them, first pivots super[0..ns], sup[p] the supernode of pivot p;
     * Z of supernode K at off[K]: ZJJ (c x c), then ZJL = Z[J, R_L]
     * (c x nl), then ZUJ = Z[R_U, J] (nu x c), column-major */
    bool snodes;
    sla_int ns, *super, *sup;
    size_t *off;
    size_t maxL, maxU, maxB; /* the largest dense blocks */
    /* Z's size, and where entry k of A is read: Z[zpos[k]] * rhat[col_k].
     * Per pivot, Z is ZL (nL: Z[p, j] on F's L entries) then ZU (nU: Z[i,
     * p] on F's U entries by rows) then Zd (n: the diagonal) */
    size_t zlen;
    size_t *zpos;
} sla__selinv_pat;

/* R_L (Lcol of the last pivot), R_U (its Urow), and their sizes, of
 * supernode K of pattern p. */
#define SLA_SN_RL(p, K) ((p)->fLi + (p)->fLp[(p)->super[(K) + 1] - 1])
#define SLA_SN_NL(p, K) ((p)->fLp[(p)->super[(K) + 1]] - (p)->fLp[(p)->super[(K) + 1] - 1])
#define SLA_SN_RU(p, K) ((p)->uRj + (p)->uRp[(p)->super[(K) + 1] - 1])
#define SLA_SN_NU(p, K) ((p)->uRp[(p)->super[(K) + 1]] - (p)->uRp[(p)->super[(K) + 1] - 1])

/* The numeric half (lu_selinv_num.c): the factor's values on F, the
 * recurrences (per pivot, or by supernodes when p->snodes), z[k] =
 * Z[zpos[k]] * rhat[col_k]. Lx, Ux, Dx: f's values, of the instance's
 * type (f->Lx, ... for double; f->zLx, ... for complex). SLA_ERR_SINGULAR
 * (a zero or non-finite pivot), SLA_ERR_NOMEM, SLA_ERR_ARGUMENT (a
 * supernode not nested: inconsistent factors). */
sla_status sla__selinv_num_d(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f,
                             const sla__selinv_pat *p, double *z);
sla_status sla__selinv_num_z(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f,
                             const sla__selinv_pat *p, sla__z *z);

#endif
