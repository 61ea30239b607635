"""Row partitions of a SparseTensor (thin bindings of include/sla/graph.h).

``A.partition(nparts, method, coords)`` is sla_partition: METIS k-way on the
graph of A + A^T ("metis"), recursive coordinate bisection ("rcb") or a
Hilbert-curve order ("hilbert") of point coordinates, row blocks
("contiguous"). ``A.extract_partition(part, k)`` is sla_partition_extract:
part k's local matrix (owned rows; owned columns first, then the ghosts
grouped by owning part) and its halo. The local values are gathered from
A's values in torch, so gradients flow back to A.
"""

import ctypes

import torch

from . import _lib as L

METHODS = {"metis": 0, "rcb": 1, "hilbert": 2, "contiguous": 3}

_I64 = ctypes.c_int64
_P = ctypes.c_void_p


class CPartitionLocal(ctypes.Structure):
    """Mirror of sla_partition_local (include/sla/graph.h)."""
    _fields_ = [("nparts", _I64), ("k", _I64), ("nowned", _I64), ("nghost", _I64),
                ("owned", _P), ("ghost", _P), ("ghost_owner", _P), ("recv_ptr", _P),
                ("send_ptr", _P), ("send_rows", _P), ("src", _P), ("A", _P)]


_protos = {}


def _fn(name, *argtypes):
    """A prototype of libsla's partition functions, made on first use (an
    older libsla without them fails here, not at import)."""
    f = _protos.get(name)
    if f is None:
        if getattr(L.lib, name, None) is None:
            raise NotImplementedError("%s needs the C function %s (include/sla/graph.h), which "
                                      "this libsla (%s) does not export" % (name, name,
                                                                             L.library_path))
        f = _protos[name] = L._proto(name, *argtypes)
    return f


def _pattern_matrix(A):
    from ._algebra import _CMat
    if A.shape[-2] != A.shape[-1]:
        raise ValueError("partition needs a square matrix (shape %s)" % (A.shape,))
    return _CMat(A.pattern)


def partition(A, nparts, method="metis", coords=None):
    """Part ids [n] (int64, in [0, nparts)) of the rows of A (one answer for
    a batch: the pattern is shared). coords: [n, dim] (dim 1..3) or [n]
    point coordinates, needed by rcb and hilbert. metis needs a libsla built
    with METIS (SlaUnavailableError otherwise). Not differentiable (ids)."""
    m = str(method).lower()
    if m not in METHODS:
        raise ValueError("partition: method must be one of %s (got %r)" % (", ".join(METHODS), method))
    if isinstance(nparts, bool) or not isinstance(nparts, int):
        raise TypeError("partition: nparts must be an int (got %r)" % (nparts,))
    cm = _pattern_matrix(A)
    n = A.shape[-1]
    dim, cptr, keep = 0, None, None
    if coords is not None:
        c = torch.as_tensor(coords).detach().to(torch.float64)
        if c.dim() == 1:
            c = c.reshape(-1, 1)
        if c.dim() != 2 or c.shape[0] != n:
            raise ValueError("partition: coords must have shape [%d, dim] (got %s)"
                             % (n, tuple(torch.as_tensor(coords).shape)))
        keep = c.contiguous()
        dim, cptr = int(c.shape[1]), keep.data_ptr()
    elif m in ("rcb", "hilbert"):
        raise ValueError("partition: method %r needs coords ([n, dim] point coordinates)" % m)
    part = torch.empty(n, dtype=torch.int64)
    f = _fn("sla_partition", ctypes.c_int, _P, _P, _I64, ctypes.c_int, _P, ctypes.c_int, _P)
    L.check(f(L.ctx(), cm.ptr, int(nparts), METHODS[m], cptr, dim, part.data_ptr()), "partition")
    del keep
    return part


def _copy(ptr, count):
    out = torch.empty(int(count), dtype=torch.int64)
    if count:
        ctypes.memmove(out.data_ptr(), ptr, 8 * int(count))
    return out


def extract_partition(A, part, k, nparts=None):
    """(A_k, info): part k of the partition `part` ([n] ids, e.g. from
    A.partition) as its owner holds it.

    A_k is a SparseTensor of shape [*batch, nowned, nowned + nghost] whose
    values are gathered from A's (differentiable); with x_local =
    cat(x[info["owned"]], x[info["ghost"]]), A_k @ x_local = (A @ x)[owned].
    info: "owned" (global rows of part k, ascending), "ghost" (global columns
    read from other parts, grouped by owner, ascending within), "ghost_owner",
    "recv_ptr" ([nparts + 1]: ghosts of part q are recv_ptr[q]:recv_ptr[q+1]),
    "send_ptr" and "send_rows" (local row numbers of part k that part q
    reads: send_rows[send_ptr[q]:send_ptr[q+1]]), "nparts", "k", "src"
    (position in A's CSR order of each local entry). nparts defaults to
    max(part) + 1."""
    from .sparse import SparseTensor
    cm = _pattern_matrix(A)
    n = A.shape[-1]
    part = torch.as_tensor(part)
    if part.dtype.is_floating_point or part.dtype.is_complex or part.dtype == torch.bool:
        raise TypeError("extract_partition: part ids must be integers (got %s)" % part.dtype)
    part = part.to(torch.int64).reshape(-1).contiguous()
    if part.numel() != n:
        raise ValueError("extract_partition: %d part ids for %d rows" % (part.numel(), n))
    if nparts is None:
        nparts = int(part.max()) + 1 if n else 1
    f = _fn("sla_partition_extract", ctypes.c_int, _P, _P, _I64, _P, _I64,
            ctypes.POINTER(ctypes.POINTER(CPartitionLocal)))
    destroy = _fn("sla_partition_local_destroy", None,
                  ctypes.POINTER(ctypes.POINTER(CPartitionLocal)))
    out = ctypes.POINTER(CPartitionLocal)()
    L.check(f(L.ctx(), cm.ptr, int(nparts), part.data_ptr(), int(k), ctypes.byref(out)),
            "extract_partition")
    try:
        s = out.contents
        nl, ng, P = int(s.nowned), int(s.nghost), int(s.nparts)
        nnzl = int(L.sla_matrix_nnz(s.A))
        row = torch.empty(nnzl, dtype=torch.int64)
        col = torch.empty(nnzl, dtype=torch.int64)
        L.sla_matrix_get_rowind(s.A, row.data_ptr())
        L.sla_matrix_get_colind(s.A, col.data_ptr())
        info = {"nparts": P, "k": int(s.k), "owned": _copy(s.owned, nl),
                "ghost": _copy(s.ghost, ng), "ghost_owner": _copy(s.ghost_owner, ng),
                "recv_ptr": _copy(s.recv_ptr, P + 1), "send_ptr": _copy(s.send_ptr, P + 1),
                "src": _copy(s.src, nnzl)}
        info["send_rows"] = _copy(s.send_rows, int(info["send_ptr"][-1]))
    finally:
        destroy(ctypes.byref(out))
    pat = A.pattern
    vals = A._csr_values(pat).index_select(1, info["src"])
    vals = vals.reshape(A.batch_shape + (nnzl,)).to(A.dtype)
    return SparseTensor(vals, row, col, (nl, nl + ng)), info
