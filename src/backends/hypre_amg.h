/* Private to the hypre AMG backend (hypre_amg.c, hypre_amg_cycle.c): the
 * preconditioner's state over hypre's BoomerAMG hierarchy and the exact
 * transposed cycle run on that hierarchy. Includes hypre's internal headers
 * (the AMG data structure of the hypre version sla was built against), so
 * only these two files include it. Never installed. */
#ifndef SLA_HYPRE_AMG_H
#define SLA_HYPRE_AMG_H

#include "../solvers/krylov.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <mpi.h>

#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h> /* the hierarchy (A_l, P_l, l1 norms) for transposed cycles */

/* Largest one-level "hierarchy" solved by a dense LU (see record_steps). */
#define SLA_AMG_DENSE_MAX 2000

/* ---- the transposed cycle's data ------------------------------------------ */

/* One linear step of the forward cycle. */
enum { OP_JACOBI, OP_GS_FWD, OP_GS_BWD, OP_SOLVE, OP_RESTRICT, OP_PROLONG, OP_OPAQUE };
typedef struct step {
    unsigned char op, l1; /* l1: divide by the l1 norms instead of the diagonal */
    int level;
    double weight;        /* Jacobi weight; OP_OPAQUE: the relaxation type */
} step;

typedef struct tlevel {
    HYPRE_Int n;
    const HYPRE_Int *ai, *aj; /* A_l on one process: hypre's diag block */
    const double *ax;
    const HYPRE_Int *pi, *pj; /* P_l: n_l x n_{l+1} (not on the coarsest level) */
    const double *px;
    double *inv_diag;         /* 1 / a_ii, 0 where hypre skips the row */
    double *inv_l1;           /* 1 / l1 norm, or NULL (no l1 norms on this level) */
    double *ubar, *fbar;      /* adjoints of u_l and f_l */
    double *w, *e;            /* temporaries */
} tlevel;

typedef struct tcycle {
    int nlev;
    tlevel *lev;
    double *lu;               /* coarsest matrix, LU with partial pivoting (column major) */
    int *piv;
    HYPRE_Int nc;
} tcycle;

typedef struct amg {
    sla_amg_options o;
    sla_allocator alloc;
    sla_int n;
    HYPRE_ParCSRMatrix par;   /* the values the hierarchy was built from */
    HYPRE_Solver solver;      /* NULL until set up */
    HYPRE_ParVector vb, vx;   /* shells whose data point at r and z during an apply */
    int relax_up;
    int symmetric;            /* par is symmetric: 1, 0, or -1 not yet known */
    bool self_adjoint;        /* the cycle is a symmetric operator when A is */
    int kept;                 /* refreshes since the last set-up that kept it */
    step *steps;              /* the forward cycle's steps, for transposes */
    int nsteps;
    bool recorded;            /* steps hold the whole cycle */
    bool one_level;           /* hypre built no coarse level: exact dense solves */
    const char *unsupported;  /* why the transposed cycle cannot be run, or NULL */
    tcycle *t;
    double *rcopy;            /* r when it aliases z */
    /* distributed (sla__amg_create_dist): one hierarchy over all ranks */
    bool dist;
#ifdef SLA_HAVE_MPI
    sla__amg_comm comm;       /* the communicator and the dist layer's agreement */
#endif
    bool sym_hint;            /* the caller vouches that A is symmetric */
    const sla_matrix *ddiag, *doffd; /* borrowed local blocks, re-read at refresh */
    HYPRE_ParCSRMatrix tpar;  /* A^T and its hierarchy, for transposed applies of */
    HYPRE_Solver tsolver;     /* nonsymmetric A: built at the first one */
} amg;

/* ---- hypre_amg_cycle.c: the forward cycle's steps and their transpose ---- */

/* Exact symmetry (pattern and values) of the matrix the hierarchy was built
 * from. */
bool sla__hypre_par_symmetric(const amg *g);
/* Record the forward cycle's linear steps from hypre's cycling rules (after
 * HYPRE_BoomerAMGSetup); sets g->recorded, g->one_level, g->unsupported. */
sla_status sla__hypre_record_steps(sla_ctx *ctx, amg *g);
/* Whether the recorded cycle equals its own transpose for symmetric A. */
bool sla__hypre_steps_self_adjoint(const amg *g);
/* Build (at the first transposed apply) and free the transposed cycle's
 * data: work vectors, and a dense LU of the coarsest matrix. */
sla_status sla__hypre_tcycle_build(amg *g);
void sla__hypre_tcycle_free(amg *g);
/* x = M^-1 x and M^-T x with the dense LU of the coarsest matrix. */
void sla__hypre_coarse_solve(const tcycle *t, double *x);
void sla__hypre_coarse_solve_t(const tcycle *t, double *x);
/* z = the exact transpose of the forward cycle applied to r. */
sla_status sla__hypre_cycle_transposed(amg *g, const double *r, double *z);

#endif
