/* The matrix as a Krylov operator (A or A^T), and global reductions. */
#include "krylov.h"

#include <math.h>

static void mat_apply(void *data, const double *x, double *y, int nt)
{
    const sla__matop *m = data;
    if (!m->transpose) sla__spmv(m->A, m->ib, x, y, nt);
    else if (m->AT) sla__spmv(m->AT, m->ib, x, y, nt);
    else sla__spmv_t(m->A, m->ib, x, y, nt, m->work);
}

static double mat_apply_dot(void *data, const double *x, double *y, int nt)
{
    const sla__matop *m = data;
    if (!m->transpose) return sla__spmv_dot(m->A, m->ib, x, y, nt);
    if (m->AT) return sla__spmv_dot(m->AT, m->ib, x, y, nt);
    sla__spmv_t(m->A, m->ib, x, y, nt, m->work);
    return sla__dot(m->A->ncols, x, y, nt);
}

void sla__matop_init(sla__op *op, sla__matop *m, int nt)
{
    op->n = m->A->nrows;
    op->n_global = op->n;
    op->nt = nt;
    op->data = m;
    op->apply = mat_apply;
    op->apply_dot = mat_apply_dot;
    op->allreduce = NULL;
    op->comm = NULL;
}

void sla__op_sum(const sla__op *op, double *vals, int count)
{
    if (op->allreduce) op->allreduce(op->comm, vals, count);
}

double sla__op_dot(const sla__op *op, const double *x, const double *y)
{
    double s = sla__dot(op->n, x, y, op->nt);
    sla__op_sum(op, &s, 1);
    return s;
}

/* Global ||x||_2 without overflow or underflow: the plain dot when it is
 * safe, else the sum of squares scaled by 2^e, with 2^e from the sum of
 * the processes' max |x_i| (between the global max and P times it: a
 * scale within a factor P, good enough to keep the squares in range). */
double sla__op_nrm2(const sla__op *op, const double *x)
{
    double ss = sla__op_dot(op, x, x);
    if (sla__nrm2_fast_ok(ss) || isnan(ss)) return sqrt(ss);
    double m = sla__amax(op->n, x, op->nt);
    sla__op_sum(op, &m, 1);
    if (m == 0.0 || !isfinite(m)) return m;
    int e;
    frexp(m, &e);
    double s = sla__sumsq_scaled(op->n, x, e, op->nt);
    sla__op_sum(op, &s, 1);
    return ldexp(sqrt(s), e);
}
