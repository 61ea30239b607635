/* sla — differentiable sparse linear algebra.
 * One include for the whole public API. */
#ifndef SLA_H
#define SLA_H

#include "sla/base.h"
#include "sla/matrix.h"
#include "sla/io.h"
#include "sla/gen.h"
#include "sla/ops.h"
#include "sla/algebra.h"
#include "sla/graph.h"
#include "sla/solver.h"
#include "sla/eig.h"
#include "sla/eigs.h"
#include "sla/svd.h"
#include "sla/nonlinear.h"
#include "sla/lsq.h"
#include "sla/complex.h"
#include "sla/linop.h"

#endif
