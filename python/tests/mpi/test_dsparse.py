"""sla.DSparseTensor under MPI: run by `mpirun -n P python3 test_dsparse.py`
(ctest: test_python_mpi_np1/2/3 through tests/test_python_mpi.sh).

Every rank builds the same global matrices from seeded generators; the
distributed results on each rank are compared with the serial sla solve of
the same matrix and with SciPy (spsolve of A and A^T, the gradient formulas
written out), and the gradients with a collective central difference.
Assertions are agreed across ranks (``self.agree``), so a failure on one rank
fails the test on all of them instead of leaving the others waiting; a rank
that still hangs is stopped by faulthandler's watchdog, and a failed run
aborts the job.

This directory has no __init__.py: test_python's `unittest discover` does
not enter it, so the plain Python run never imports mpi4py.
"""

import faulthandler
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from mpi4py import MPI

import sla

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def spd_matrix(seed=1, m=9):
    """2D Poisson on an m x m grid plus a random positive diagonal (n = m^2)."""
    rng = np.random.default_rng(seed)
    T = sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    A = sp.kronsum(T, T).tocsr() + sp.diags(rng.uniform(0.1, 1.0, m * m))
    return sp.csr_matrix(A)


def nonsym_matrix(seed=2, n=70):
    """Random nonsymmetric, diagonally dominant."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=0.06, random_state=rng, format="csr")
    R.data = rng.uniform(-1.0, 1.0, R.nnz)
    d = np.asarray(abs(R).sum(axis=1)).ravel() + 1.0
    A = (R + sp.diags(d)).tocsr()
    A.sort_indices()
    return A


def scipy_grads(A, b, w):
    """x = A^-1 b, loss = w.x: gb = A^-T w, gA[k] = -gb[row_k] x[col_k] (CSR order)."""
    A = sp.csr_matrix(A)
    x = spla.spsolve(A.tocsc(), b)
    gb = spla.spsolve(A.T.tocsc(), w)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    return x, gb, -gb[rows] * x[A.indices]


def serial_grads(A, b, w):
    """The serial sla solve (direct) of the same problem with autograd."""
    S = sla.SparseTensor.from_scipy(A, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    x = S.solve(bt, method="lu")
    (torch.tensor(w) * x).sum().backward()
    return x.detach().numpy(), bt.grad.numpy(), S.values.grad.numpy()


class DistTest(unittest.TestCase):
    def agree(self, ok, msg=""):
        """Fail on every rank when ok is false on any (messages of all)."""
        oks = comm.allgather((bool(ok), msg))
        bad = ["rank %d: %s" % (r, m) for r, (o, m) in enumerate(oks) if not o]
        self.assertFalse(bad, "; ".join(bad))

    def close(self, a, b, tol, what):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-300) if b.size else 0.0
        self.agree(a.shape == b.shape and err <= tol, "%s: shapes %s %s, rel err %.3e"
                   % (what, a.shape, b.shape, err))

    def root_close(self, a, b, tol, what, root=0):
        """close() of results that exist on root only (one collective on every rank)."""
        if rank == root:
            self.close(a, b, tol, what)
        else:
            self.agree(a is None, "%s: a result on a non-root rank" % what)

    def raises_everywhere(self, exc, fn):
        try:
            fn()
            got = None
        except exc as e:
            got = e
        except Exception as e:  # noqa: BLE001 - reported below, on every rank
            self.agree(False, "raised %r, expected %s" % (e, exc.__name__))
        self.agree(got is not None, "%s not raised" % exc.__name__)
        return got


class TestScatterGather(DistTest):
    def test_round_trip(self):
        A = nonsym_matrix()
        for part in ("metis", "rows"):
            D = sla.DSparseTensor.scatter(sla.SparseTensor.from_scipy(A) if rank == 0 else None,
                                          comm, partition=part)
            self.agree(comm.allreduce(D.nlocal) == A.shape[0], "row blocks")
            self.agree(comm.allreduce(D.nnz_local) == A.nnz, "nnz")
            rows = comm.allgather(D.global_rows.numpy())
            self.agree(sorted(np.concatenate(rows)) == list(range(A.shape[0])), "global_rows")
            if part == "rows":
                self.agree(np.array_equal(D.global_rows.numpy(),
                                          np.arange(D.row_start, D.row_start + D.nlocal)),
                           "rows partition renumbers")
            G = D.gather()
            gv = D.gather_values()
            x = np.random.default_rng(5).standard_normal(A.shape[0])
            xl = D.scatter_vector(torch.tensor(x) if rank == 0 else None)
            self.close(xl.numpy(), x[D.global_rows.numpy()], 0, "scatter_vector " + part)
            xg = D.gather_vector(xl)
            self.root_close(None if G is None else (G.to_scipy() - A).toarray(), np.zeros(A.shape), 0,
                            "gather " + part)
            self.root_close(gv, A.data, 0, "gather_values " + part)
            self.root_close(xg, x, 0, "gather_vector " + part)
            D.close()


class TestSolve(DistTest):
    def check_solve(self, A, part, **kw):
        n = A.shape[0]
        rng = np.random.default_rng(11)
        b, w = rng.standard_normal(n), rng.standard_normal(n)
        D = sla.DSparseTensor.scatter(sla.SparseTensor.from_scipy(A) if rank == 0 else None,
                                      comm, partition=part)
        bl = D.scatter_vector(torch.tensor(b) if rank == 0 else None).requires_grad_()
        wl = D.scatter_vector(torch.tensor(w) if rank == 0 else None)
        D.values.requires_grad_()
        x, info = D.solve(bl, rtol=1e-13, return_info=True, **kw)
        self.agree(info.converged, "solve did not converge: %r" % info)
        (wl * x).sum().backward()
        self.agree(info.adjoint is not None and info.adjoint.converged, "adjoint: %r"
                   % info.adjoint)
        # on each rank: the local parts equal the serial sla solve's and SciPy's
        xs, gbs, gAs = serial_grads(A, b, w) if rank == 0 else (None, None, None)
        xs, gbs = comm.bcast((xs, gbs))
        xr, gbr, gAr = scipy_grads(A, b, w)
        g = D.global_rows.numpy()
        tag = "%s %s" % (part, kw)
        self.close(x.detach().numpy(), xs[g], 1e-9, "x vs serial " + tag)
        self.close(x.detach().numpy(), xr[g], 1e-9, "x vs scipy " + tag)
        self.close(bl.grad.numpy(), gbs[g], 1e-9, "grad b vs serial " + tag)
        self.close(bl.grad.numpy(), gbr[g], 1e-9, "grad b vs scipy " + tag)
        gv = D.gather_values(D.values.grad)
        self.root_close(gv, gAs, 1e-8, "grad values vs serial " + tag)
        self.root_close(gv, gAr, 1e-8, "grad values vs scipy " + tag)
        return D, info

    def test_spd_cg_metis(self):
        D, info = self.check_solve(spd_matrix(), "metis", preconditioner="jacobi")
        self.agree(info.method == "cg" and "auto: symmetric, positive diagonal" in info.note,
                   "auto dispatch: %r" % info)
        D, info = self.check_solve(spd_matrix(), "rows", method="minres")
        self.agree(info.method == "minres", repr(info))

    def test_nonsymmetric(self):
        D, info = self.check_solve(nonsym_matrix(), "metis", preconditioner="ilu0")
        self.agree(info.method == "gmres" and "nonsymmetric" in info.note, repr(info))
        self.check_solve(nonsym_matrix(), "rows", method="bicgstab", preconditioner="jacobi")

    @unittest.skipUnless(sla.has_feature("hypre"), "libsla without hypre")
    def test_amg(self):
        self.check_solve(spd_matrix(m=12), "metis", method="cg", preconditioner="amg")

    def test_saamg(self):
        # sla's smoothed aggregation as one hierarchy over the ranks (n = 1600: two levels)
        D, info = self.check_solve(spd_matrix(m=40), "metis", method="cg", preconditioner="saamg")
        self.agree("saamg: 2 levels" in info.note, repr(info))

    def test_several_rhs_and_new_values(self):
        A = spd_matrix()
        n = A.shape[0]
        D = sla.DSparseTensor.scatter(sla.SparseTensor.from_scipy(A) if rank == 0 else None,
                                      comm)
        B = np.random.default_rng(3).standard_normal((n, 3))
        Bl = torch.stack([D.scatter_vector(torch.tensor(B[:, j]) if rank == 0 else None)
                          for j in range(3)], 1)
        X = D.solve(Bl, method="cg", rtol=1e-13)
        Xr = spla.spsolve(A.tocsc(), B)
        g = D.global_rows.numpy()
        self.close(X.numpy(), Xr[g], 1e-9, "3 right-hand sides")
        # new values on the same pattern: the solver is refreshed on every rank
        D2 = D.with_values(2.0 * D.values)
        self.close(D2.solve(Bl, method="cg", rtol=1e-13).numpy(), Xr[g] / 2, 1e-9, "2 A")
        self.close(D.solve(Bl, method="cg", rtol=1e-13).numpy(), Xr[g], 1e-9, "A again")

    def test_directional_derivative(self):
        """d/dh loss(v + h dv, b + h db) by central differences, summed over
        the ranks, against the sum of <grad, direction> from the VJPs."""
        A = nonsym_matrix(seed=7, n=50)
        D = sla.DSparseTensor.scatter(sla.SparseTensor.from_scipy(A) if rank == 0 else None,
                                      comm)
        rng = np.random.default_rng(100 + rank)  # each rank its own direction and weights
        v0 = D.values.detach().clone()
        b0 = torch.tensor(rng.standard_normal(D.nlocal))
        w = torch.tensor(rng.standard_normal(D.nlocal))
        dv = torch.tensor(rng.standard_normal(D.nnz_local))
        db = torch.tensor(rng.standard_normal(D.nlocal))

        def loss(v, b):
            x = D.with_values(v).solve(b, method="gmres", rtol=1e-14, restart=60)
            return comm.allreduce(float((w * x).sum()))

        v = v0.clone().requires_grad_()
        b = b0.clone().requires_grad_()
        x = D.with_values(v).solve(b, method="gmres", rtol=1e-14, restart=60)
        (w * x).sum().backward()
        ad = comm.allreduce(float((v.grad * dv).sum() + (b.grad * db).sum()))
        h = 1e-6
        fd = (loss(v0 + h * dv, b0 + h * db) - loss(v0 - h * dv, b0 - h * db)) / (2 * h)
        self.agree(abs(fd - ad) <= 1e-6 * abs(ad), "directional derivative %r vs %r" % (fd, ad))


class TestFromLocalRows(DistTest):
    def test_coo_rows_with_duplicates(self):
        A = nonsym_matrix(seed=4, n=40).tocoo()
        n = A.shape[0]
        rng = np.random.default_rng(9)
        # uneven contiguous blocks; entries shuffled and some split in two
        starts = np.concatenate([[0], np.sort(rng.choice(np.arange(1, n), size - 1,
                                                         replace=False))]).astype(int)
        split = rng.random(A.nnz) < 0.3
        r = np.concatenate([A.row, A.row[split]])
        c = np.concatenate([A.col, A.col[split]])
        v = np.concatenate([np.where(split, 0.25 * A.data, A.data), 0.75 * A.data[split]])
        perm = rng.permutation(r.size)
        r, c, v = r[perm], c[perm], v[perm]
        lo, hi = starts[rank], starts[rank + 1] if rank + 1 < size else n
        mine = np.nonzero((r >= lo) & (r < hi))[0]
        vals = torch.tensor(v[mine], requires_grad=True)
        D = sla.DSparseTensor.from_local_rows(vals, torch.tensor(r[mine]), torch.tensor(c[mine]),
                                              n, int(lo), comm)
        self.agree((D.row_start, D.nlocal, D.n) == (lo, hi - lo, n), "layout")
        self.agree(np.array_equal(D.global_rows.numpy(), np.arange(lo, hi)), "global rows")
        b, wv = rng.standard_normal(n), rng.standard_normal(n)
        bl = torch.tensor(b[lo:hi], requires_grad=True)
        x = D.solve(bl, method="gmres", preconditioner="jacobi", rtol=1e-13)
        y = D @ x  # = b
        (torch.tensor(wv[lo:hi]) * x).sum().backward()
        # the serial reference on the same COO list (duplicates and order kept)
        S = sla.SparseTensor(torch.tensor(v, requires_grad=True), torch.tensor(r),
                             torch.tensor(c), (n, n))
        bs = torch.tensor(b, requires_grad=True)
        xs = S.solve(bs, method="lu")
        (torch.tensor(wv) * xs).sum().backward()
        self.close(x.detach().numpy(), xs.detach().numpy()[lo:hi], 1e-9, "x")
        self.close(y.detach().numpy(), b[lo:hi], 1e-9, "A x = b")
        self.close(bl.grad.numpy(), bs.grad.numpy()[lo:hi], 1e-9, "grad b")
        self.close(vals.grad.numpy(), S.values.grad.numpy()[mine], 1e-8, "grad values (COO)")
        G = D.gather()
        self.root_close(None if G is None else G.to_dense(), A.toarray(), 1e-15, "gather")


class TestMatvec(DistTest):
    def test_matvec_and_transpose_grads(self):
        A = nonsym_matrix(seed=6, n=60)
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        rng = np.random.default_rng(21)
        x, gy = rng.standard_normal(A.shape[0]), rng.standard_normal(A.shape[0])
        for part in ("metis", "rows"):
            for transpose in (False, True):
                D = sla.DSparseTensor.scatter(
                    sla.SparseTensor.from_scipy(A) if rank == 0 else None, comm, partition=part)
                D.values.requires_grad_()
                xl = D.scatter_vector(torch.tensor(x) if rank == 0 else None).requires_grad_()
                gyl = D.scatter_vector(torch.tensor(gy) if rank == 0 else None)
                y = D.matvec(xl, transpose=transpose)
                (gyl * y).sum().backward()
                M = A.T if transpose else A
                g = D.global_rows.numpy()
                tag = "%s transpose=%s" % (part, transpose)
                self.close(y.detach().numpy(), (M @ x)[g], 1e-13, "y " + tag)
                self.close(xl.grad.numpy(), (M.T @ gy)[g], 1e-13, "grad x " + tag)
                gA = (x[rows] * gy[A.indices]) if transpose else (gy[rows] * x[A.indices])
                gv = D.gather_values(D.values.grad)
                self.root_close(gv, gA, 1e-13, "grad values " + tag)


class TestFilesAndErrors(DistTest):
    def test_save_load(self):
        A = nonsym_matrix(seed=8, n=30)
        D = sla.DSparseTensor.scatter(sla.SparseTensor.from_scipy(A) if rank == 0 else None,
                                      comm)
        d = comm.bcast(tempfile.mkdtemp(prefix="sla_dsparse_") if rank == 0 else None)
        try:
            D.save(os.path.join(d, "A"))
            # onto the same ranks, and onto two groups of them (a different count)
            for c in (comm, comm.Split(0 if rank == 0 else 1, rank)):
                E = sla.DSparseTensor.load(os.path.join(d, "A"), c)
                G = E.gather()
                self.root_close(None if G is None else (G.to_scipy() - A).toarray(), np.zeros(A.shape), 0,
                                "load onto %d ranks" % c.Get_size(), root=rank if c.Get_rank() == 0 else -1)
                E.close()
        finally:
            comm.Barrier()
            if rank == 0:
                shutil.rmtree(d, ignore_errors=True)

    def test_errors_on_every_rank(self):
        A = spd_matrix(m=5)
        S = sla.SparseTensor.from_scipy(A) if rank == 0 else None
        self.raises_everywhere(ValueError, lambda: sla.DSparseTensor.scatter(S, comm, "spectral"))
        D = sla.DSparseTensor.scatter(S, comm)
        e = self.raises_everywhere(sla.SlaUnavailableError, lambda: D.solve(
            torch.ones(D.nlocal), method="lu"))
        self.agree("not available distributed" in str(e), str(e))
        self.raises_everywhere(NotImplementedError, lambda: D.eigsh(2))
        self.raises_everywhere(ValueError, lambda: D.solve(torch.ones(D.nlocal + 1)))
        # one rank's bad entry: that rank raises its own error, the others name it
        n = 4 * size
        lo = 4 * rank
        bad = rank == size - 1
        r = torch.tensor([lo, lo + 1, lo + 2, lo + 3 if not bad else lo + 4])
        e = self.raises_everywhere(IndexError if size == 1 else Exception, lambda: (
            sla.DSparseTensor.from_local_rows(torch.ones(4), r, r % n, n, lo, comm)))
        want = "not one of this rank's rows" if bad else "rank %d:" % (size - 1)
        self.agree(want in str(e), str(e))


if __name__ == "__main__":
    # a rank stuck in a collective another rank never reaches: dump the
    # stacks and exit, so mpirun ends the job instead of the ctest timeout
    faulthandler.dump_traceback_later(240, exit=True)
    prog = unittest.main(argv=[sys.argv[0], "-v"] if rank == 0 else [sys.argv[0]],
                         exit=False, verbosity=2 if rank == 0 else 0)
    ok = comm.allreduce(int(prog.result.wasSuccessful()), op=MPI.MIN)
    faulthandler.cancel_dump_traceback_later()
    if not ok:
        sys.stdout.flush()
        sys.stderr.flush()
        comm.Abort(1)
