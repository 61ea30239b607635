"""Files for SparseTensor and SparseTensorList.

Matrix Market through the C library (sla_mm_read / sla_mm_write: strict
validation with line numbers, 17 significant digits, atomic replacement),
and an exact binary form (NumPy's .npz: values, indices and shape as they
are, any batch shape, lists of tensors with different patterns).
"""
import ctypes
import os

import numpy as np
import torch

from . import _lib as L
from ._core import c_dtype

_mm_read = L._proto("sla_mm_read", ctypes.c_int, L.P, ctypes.c_char_p, ctypes.c_int,
                    ctypes.POINTER(ctypes.c_void_p))
_mm_write = L._proto("sla_mm_write", ctypes.c_int, L.P, ctypes.c_char_p, L.P, ctypes.c_int64)

_FORMAT = "sla-sparse-1"


def _path(path):
    return os.fsencode(os.fspath(path))


def load_mtx(path, dtype=torch.float64):
    """A SparseTensor from a coordinate Matrix Market file (real, integer,
    pattern or complex; general, symmetric, skew-symmetric or Hermitian,
    expanded to both triangles; any shape). dtype gives the precision: a
    complex file gives complex values (float64 or complex128: complex128,
    float32 or complex64: complex64); a real file read with a complex
    dtype gets zero imaginary parts. Errors name the file and line
    (SlaError)."""
    from ._complex import sparse_from_c
    M = ctypes.c_void_p()
    want = L.SLA_C128 if dtype in (torch.complex128, torch.complex64) else L.SLA_F64
    L.check(_mm_read(L.ctx(), _path(path), want, ctypes.byref(M)), "load_mtx")
    try:
        return sparse_from_c(M, dtype)
    finally:
        L.sla_matrix_destroy(ctypes.byref(M))


def save_mtx(path, A, index=None):
    """Write A (one matrix: for a batch, `index` picks it, a tuple or an int
    into the batch) as "coordinate real general" ("coordinate complex
    general" for complex values, where libsla's writer supports them),
    duplicates summed, in CSR order, with 17 significant digits (float64
    round-trips exactly). The file is replaced atomically; non-finite
    values are refused."""
    vals = A.values.detach()
    if A.batch_shape:
        if index is None:
            raise ValueError("save_mtx: A holds a batch of %s matrices: pass index=..."
                             % (tuple(A.batch_shape),))
        vals = vals[index]
        if vals.dim() != 1:
            raise ValueError("save_mtx: index must pick one matrix of the batch")
    elif index is not None:
        raise ValueError("save_mtx: index is only for a batch")
    p = A.pattern
    dt = torch.complex128 if vals.is_complex() else torch.float64
    csr = p.csr_values(vals.to(dt).resolve_conj().reshape(1, -1)).contiguous()
    M = ctypes.c_void_p()
    L.check(L.sla_matrix_from_csr(L.ctx(), p.nrows, p.ncols, p.rowptr.data_ptr(),
                                  p.colind.data_ptr(), c_dtype(dt), 1,
                                  csr.data_ptr(), L.SLA_BORROW, ctypes.byref(M)), "save_mtx")
    try:
        L.check(_mm_write(L.ctx(), _path(path), M, 0), "save_mtx")
    finally:
        L.sla_matrix_destroy(ctypes.byref(M))


def _parts(A, prefix):
    return {prefix + "values": A.values.detach().cpu().numpy(),
            prefix + "row": A.row.cpu().numpy(), prefix + "col": A.col.cpu().numpy(),
            prefix + "shape": np.asarray(A.shape[-2:], dtype=np.int64)}


def save(path, A):
    """Write a SparseTensor or a SparseTensorList exactly (values of any
    dtype and batch shape, COO indices as given, duplicates kept) to an
    uncompressed .npz file. The inverse is sla.load."""
    from .sparse import SparseTensor, SparseTensorList
    if isinstance(A, SparseTensor):
        arrays = dict(_parts(A, ""), kind=np.asarray("tensor"))
    elif isinstance(A, SparseTensorList):
        arrays = {"kind": np.asarray("list"), "count": np.asarray(len(A), dtype=np.int64)}
        for i, t in enumerate(A):
            arrays.update(_parts(t, "%d/" % i))
    else:
        raise TypeError("sla.save: a SparseTensor or SparseTensorList (got %s)"
                        % type(A).__name__)
    arrays["format"] = np.asarray(_FORMAT)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _tensor(z, prefix):
    from .sparse import SparseTensor
    shape = tuple(int(s) for s in z[prefix + "shape"])
    return SparseTensor(torch.from_numpy(z[prefix + "values"].copy()),
                        torch.from_numpy(z[prefix + "row"].copy()),
                        torch.from_numpy(z[prefix + "col"].copy()), shape)


def load(path):
    """Read what sla.save wrote: a SparseTensor or a SparseTensorList."""
    from .sparse import SparseTensorList
    with np.load(path, allow_pickle=False) as z:
        if "format" not in z.files or str(z["format"]) != _FORMAT:
            raise ValueError("sla.load: %s is not a file written by sla.save" % os.fspath(path))
        kind = str(z["kind"])
        if kind == "tensor":
            return _tensor(z, "")
        return SparseTensorList([_tensor(z, "%d/" % i) for i in range(int(z["count"]))])
