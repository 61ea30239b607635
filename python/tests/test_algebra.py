"""Sparse algebra and graph tools of SparseTensor against dense torch and
SciPy; gradients by torch.autograd.gradcheck."""

import math
import os
import sys
import unittest

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

F64 = torch.float64


def rnd(m, n, density, seed, requires_grad=False):
    M = sp.random(m, n, density=density, random_state=np.random.default_rng(seed), format="coo")
    return sla.SparseTensor.from_scipy(M, requires_grad=requires_grad), M.tocsr()


def batched(A, nb, seed):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn((nb, A.nnz), dtype=F64, generator=g)
    return sla.SparseTensor(v, A.row, A.col, A.shape)


class TestAlgebra(unittest.TestCase):
    def test_matmul_vs_scipy(self):
        A, Ms = rnd(30, 20, 0.15, 1)
        B, Ns = rnd(20, 25, 0.15, 2)
        C = A @ B
        np.testing.assert_allclose(C.to_dense().numpy(), (Ms @ Ns).toarray(), atol=1e-14)
        x = torch.randn(25, dtype=F64)
        np.testing.assert_allclose((A @ (B @ x)).numpy(), (C @ x).numpy(), atol=1e-12)

    def test_add_sub_mul_scale(self):
        A, Ms = rnd(12, 9, 0.3, 3)
        B, Ns = rnd(12, 9, 0.3, 4)
        Da, Db = A.to_dense(), B.to_dense()
        for got, ref in [(A + B, Da + Db), (A - B, Da - Db), (A * B, Da * Db),
                         (2.5 * A, 2.5 * Da), (A * 2.5, 2.5 * Da), (-A, -Da), (A / 2, Da / 2)]:
            torch.testing.assert_close(got.to_dense(), ref, atol=1e-14, rtol=0)
        self.assertEqual((A * B).nnz, Ms.multiply(Ns).nnz)  # the intersection
        self.assertEqual((A + B).nnz, (abs(Ms) + abs(Ns)).nnz)  # the union

    def test_batched_and_broadcast(self):
        A, _ = rnd(10, 8, 0.3, 5)
        B, _ = rnd(8, 7, 0.3, 6)
        Ab, Bb = batched(A, 3, 1), batched(B, 3, 2)
        for X, Y in [(Ab, Bb), (Ab, B), (A, Bb)]:
            C = X @ Y
            ref = X.to_dense() @ Y.to_dense()
            torch.testing.assert_close(C.to_dense(), ref, atol=1e-13, rtol=0)
        A2, _ = rnd(10, 8, 0.3, 7)
        for X, Y in [(Ab, batched(A2, 3, 3)), (Ab, A2)]:
            torch.testing.assert_close((X + Y).to_dense(), X.to_dense() + Y.to_dense())
            torch.testing.assert_close((X * Y).to_dense(), X.to_dense() * Y.to_dense())
        with self.assertRaises(ValueError):
            Ab @ batched(B, 2, 1)

    def test_gradcheck(self):
        A, _ = rnd(9, 7, 0.3, 8)
        B, _ = rnd(7, 6, 0.3, 9)
        A2, _ = rnd(9, 7, 0.3, 10)
        va = A.values.clone().requires_grad_()
        vb = B.values.clone().requires_grad_()
        v2 = A2.values.clone().requires_grad_()
        mk = lambda v, X: sla.SparseTensor(v, X.row, X.col, X.shape)  # noqa: E731
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) @ mk(b, B)).values, (va, vb)))
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) + mk(b, A2)).values, (va, v2)))
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) - 3 * mk(b, A2)).values, (va, v2)))
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) * mk(b, A2)).values, (va, v2)))
        # batched with a broadcast operand
        vab = torch.randn((2, A.nnz), dtype=F64, requires_grad=True)
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) @ mk(b, B)).values, (vab, vb)))
        self.assertTrue(gradcheck(lambda a, b: (mk(a, A) * mk(b, A2)).values, (vab, v2)))
        # reductions
        for f in [lambda a: mk(a, A).norm(), lambda a: mk(a, A).norm(1),
                  lambda a: mk(a, A).norm(math.inf), lambda a: mk(a, A).sum(),
                  lambda a: mk(a, A).sum(0), lambda a: mk(a, A).sum(1),
                  lambda a: mk(a, A).diagonal()]:
            self.assertTrue(gradcheck(f, (va,)))

    def test_reductions_vs_dense(self):
        A, Ms = rnd(11, 9, 0.3, 11)
        D = torch.tensor(Ms.toarray())
        torch.testing.assert_close(A.norm(), torch.linalg.norm(D))
        torch.testing.assert_close(A.norm(1), torch.linalg.norm(D, 1))
        torch.testing.assert_close(A.norm(math.inf), torch.linalg.norm(D, math.inf))
        torch.testing.assert_close(A.sum(), D.sum())
        torch.testing.assert_close(A.sum(0), D.sum(0))
        torch.testing.assert_close(A.sum(1), D.sum(1))
        torch.testing.assert_close(A.diagonal(), torch.diagonal(D))
        Ab = batched(A, 2, 4)
        torch.testing.assert_close(Ab.sum(1), Ab.to_dense().sum(-1))
        torch.testing.assert_close(Ab.norm(), torch.linalg.norm(Ab.to_dense(), dim=(-2, -1)))

    def test_transpose_property(self):
        A, Ms = rnd(5, 4, 0.5, 12)
        self.assertEqual(A.T.shape, (4, 5))
        np.testing.assert_allclose(A.T.to_dense().numpy(), Ms.T.toarray())
        np.testing.assert_allclose(A.H.to_dense().numpy(), Ms.T.toarray())
        np.testing.assert_allclose(A.transpose().to_dense().numpy(), Ms.T.toarray())
        torch.testing.assert_close((A.T @ A).to_dense(), A.to_dense().T @ A.to_dense())

    def test_matmul_paths(self):
        """The first product (pattern and values in one pass, values handed
        out without a copy) and the cached one give SciPy's sorted pattern
        and values, at 1 and 2 threads, with row chunks; A @ A with B is A;
        the values outlive the pattern cache; float32 operands."""
        import gc
        from sla import _algebra
        t0 = sla.get_num_threads()
        try:
            for nt in (1, 2):
                sla.set_num_threads(nt)
                A, Ms = rnd(3000, 2000, 0.003, 21 + nt)
                B, Ns = rnd(2000, 1500, 0.003, 31 + nt)
                ref = (Ms @ Ns).tocsr()
                ref.sort_indices()
                for _ in range(2):  # first, then cached
                    got = (A @ B).to_scipy().tocsr()
                    np.testing.assert_array_equal(got.indptr, ref.indptr)
                    np.testing.assert_array_equal(got.indices, ref.indices)
                    np.testing.assert_allclose(got.data, ref.data, rtol=1e-13, atol=1e-15)
                Q, Qs = rnd(3000, 3000, 0.002, 41 + nt)
                got = (Q @ Q).to_scipy().tocsr()  # B is A
                ref = (Qs @ Qs).tocsr()
                ref.sort_indices()
                np.testing.assert_array_equal(got.indices, ref.indices)
                np.testing.assert_allclose(got.data, ref.data, rtol=1e-13, atol=1e-15)
        finally:
            sla.set_num_threads(t0)
        # B is A: one pattern check, one operand matrix; values and gradient
        S, Ss = rnd(40, 40, 0.1, 41, requires_grad=True)
        C = S @ S
        np.testing.assert_allclose(C.to_dense().detach().numpy(), (Ss @ Ss).toarray(),
                                   atol=1e-14)
        va = S.values.detach().clone().requires_grad_(True)
        self.assertTrue(gradcheck(
            lambda a: (lambda M: M @ M)(sla.SparseTensor(a, S.row, S.col, S.shape)).values,
            (va,)))
        # the first product's values live in C's array: still right after the
        # cache that held it is cleared
        A, Ms = rnd(50, 60, 0.1, 51)
        B, Ns = rnd(60, 70, 0.1, 52)
        _algebra._cache.clear()
        C = A @ B
        _algebra._cache.clear()
        gc.collect()
        junk = [torch.randn(C.nnz, dtype=F64) for _ in range(4)]  # reuse freed memory
        np.testing.assert_allclose(C.to_dense().numpy(), (Ms @ Ns).toarray(), atol=1e-14)
        del junk
        # float32 operands: a float32 result with float64 sums rounded once
        A32 = A.to(torch.float32)
        C32 = A32 @ B.to(torch.float32)
        self.assertEqual(C32.dtype, torch.float32)
        ref32 = (Ms.astype(np.float32).astype(np.float64) @ Ns.astype(np.float32)
                 .astype(np.float64)).toarray()
        np.testing.assert_allclose(C32.to_dense().double().numpy(), ref32, rtol=1e-6, atol=1e-6)
        # a non-finite value is refused, and the operand pool still works after
        bad = A.with_values(A.values.clone())
        bad.values[0] = float("nan")
        with self.assertRaises(sla.SlaError):
            bad @ B
        np.testing.assert_allclose((A @ B).to_dense().numpy(), (Ms @ Ns).toarray(), atol=1e-14)

    def test_result_pattern_adopted(self):
        """A product's pattern is adopted from C (no second analysis): it
        serves the next operations (a chained product, a sum, a solve), and
        indices rewritten in place are noticed (a fresh analysis)."""
        from sla import _algebra
        A, Ms = rnd(60, 50, 0.08, 61)
        B, Ns = rnd(50, 60, 0.08, 62)
        E, Es = rnd(60, 40, 0.08, 63)
        C = A @ B
        self.assertIsInstance(C.pattern, _algebra._ResultPattern)
        np.testing.assert_allclose((C @ E).to_dense().numpy(), (Ms @ Ns @ Es).toarray(),
                                   atol=1e-13)
        np.testing.assert_allclose((C + C.T).to_dense().numpy(),
                                   (Ms @ Ns + (Ms @ Ns).T).toarray(), atol=1e-13)
        n = 60
        eye = sla.SparseTensor(torch.full((n,), 10.0, dtype=F64), torch.arange(n),
                               torch.arange(n), (n, n))
        K = (C @ C.T) + eye  # SPD
        b = torch.ones(n, dtype=F64)
        x = K.solve(b)
        torch.testing.assert_close(K.to_dense() @ x, b, atol=1e-9, rtol=0)
        # indices rewritten in place: the adopted pattern no longer matches
        C2 = A @ B
        col = C2.col.clone()
        k = int((C2.row == C2.row[0]).sum())  # entries of the first stored row
        C2.col[0], C2.col[k - 1] = col[k - 1], col[0]  # swap two columns of that row
        self.assertNotIsInstance(C2.pattern, _algebra._ResultPattern)
        dense = torch.zeros(C2.shape, dtype=F64)
        dense.index_put_((C2.row, C2.col), C2.values.detach(), accumulate=True)
        torch.testing.assert_close(C2.to_dense(), dense)
        C2.col.copy_(col)  # the shared index tensor back as it was

    def test_lazy_indices(self):
        """A product's int64 row and col are made only when read: products,
        scaling, a chained product and a matvec leave them unmade; read,
        they equal SciPy's sorted CSR expanded to COO (empty rows and
        columns, duplicates summed, a rectangular shape), are shared with
        the scaled copies, and in-place writes to them (torch or a numpy
        view) are noticed; a new row or col can be assigned."""
        from sla import _algebra
        rng = np.random.default_rng(71)
        m, k, n = 300, 120, 80
        ra = rng.integers(0, m - 20, 900)  # rows m-20.. of A empty
        ca = rng.integers(0, k - 7, 900)   # columns k-7.. of A empty
        ra = np.concatenate([ra, ra[:50]])  # duplicates, summed
        ca = np.concatenate([ca, ca[:50]])
        va = rng.standard_normal(ra.size)
        rb = rng.integers(0, k, 700)
        cb = rng.integers(5, n, 700)       # columns 0..4 of B empty
        vb = rng.standard_normal(rb.size)
        As = sp.coo_matrix((va, (ra, ca)), shape=(m, k)).tocsr()
        Bs = sp.coo_matrix((vb, (rb, cb)), shape=(k, n)).tocsr()
        ref = (As @ Bs).tocsr()
        ref.sort_indices()
        ref_row = np.repeat(np.arange(m), np.diff(ref.indptr))
        A = sla.SparseTensor(torch.tensor(va), torch.tensor(ra), torch.tensor(ca), (m, k))
        B = sla.SparseTensor(torch.tensor(vb), torch.tensor(rb), torch.tensor(cb), (k, n))
        t0 = sla.get_num_threads()
        vals = []
        try:
            for nt in (1, 2):
                sla.set_num_threads(nt)
                _algebra._cache.clear()
                C = A @ B
                D = C * 2.0
                y = C @ torch.ones(n, dtype=F64)
                self.assertFalse(C._src.coo_made())  # nothing read the indices yet
                self.assertIs(C.pattern, D.pattern)
                vals.append(C.values.clone())
                np.testing.assert_allclose(y.numpy(), ref @ np.ones(n), atol=1e-13)
                np.testing.assert_array_equal(C.row.numpy(), ref_row)
                np.testing.assert_array_equal(C.col.numpy(), ref.indices)
                np.testing.assert_allclose(C.values.numpy(), ref.data, rtol=1e-13, atol=1e-15)
                self.assertTrue(C._src.coo_made())
                self.assertIs(D.row, C.row)  # one pair of index tensors
                self.assertIsInstance(D.pattern, _algebra._ResultPattern)
        finally:
            sla.set_num_threads(t0)
        self.assertTrue(torch.equal(vals[0], vals[1]))  # 1 and 2 threads: bitwise
        # a product of products: the inner result's indices stay unmade
        _algebra._cache.clear()
        C = A @ B
        H = C @ sla.SparseTensor.from_scipy(Bs.T.tocoo())
        self.assertFalse(C._src.coo_made())
        np.testing.assert_allclose(H.to_dense().numpy(), (As @ Bs @ Bs.T).toarray(), atol=1e-12)
        G = C.T.T @ C.T  # .T reads C's indices: eager operands from here on
        self.assertTrue(C._src.coo_made())
        np.testing.assert_allclose(G.to_dense().numpy(), (ref @ ref.T).toarray(), atol=1e-12)
        # in-place writes to the made indices are noticed, through numpy too
        _algebra._cache.clear()
        C = A @ B
        i = int(np.argmax(np.diff(ref.indptr) >= 2))  # a row with two entries
        p = ref.indptr[i]
        col = C.col.clone()
        C.col.numpy()[p], C.col.numpy()[p + 1] = col[p + 1], col[p]  # swapped: unsorted
        self.assertNotIsInstance(C.pattern, _algebra._ResultPattern)
        swapped = ref.indices.copy()
        swapped[p], swapped[p + 1] = ref.indices[p + 1], ref.indices[p]
        dense = np.zeros((m, n))
        dense[ref_row, swapped] = ref.data
        x = torch.randn(n, dtype=F64)
        np.testing.assert_allclose((C @ x).numpy(), dense @ x.numpy(), atol=1e-13)
        C.col.copy_(col)
        # assigning new indices (any integer dtype): the new pattern is used
        _algebra._cache.clear()
        C = A @ B
        C.row = C.row.to(torch.int32)  # same entries, another dtype
        torch.testing.assert_close(C.to_dense(), torch.tensor((As @ Bs).toarray()))
        C.col = torch.tensor(ref.indices[::-1].copy())  # other columns
        dense = np.zeros((m, n))
        np.add.at(dense, (ref_row, ref.indices[::-1]), ref.data)
        np.testing.assert_allclose(C.to_dense().numpy(), dense, atol=1e-14)
        with self.assertRaises(ValueError):
            (A @ B).with_values(torch.zeros(3, dtype=F64))

    def test_large_product(self):
        """A product of over 4 MB of values, first (C's arrays on huge pages)
        and on the cached pattern (torch's array, hinted likewise), at 1
        and 2 threads: SciPy's sorted pattern and values."""
        from sla import _algebra
        A = sla.poisson(2, 300)
        S = A.to_scipy().tocsr()
        ref = (S @ S).tocsr()
        ref.sort_indices()
        try:
            for nt in (1, 2):
                sla.set_num_threads(nt)
                _algebra._cache.clear()
                for _ in range(2):  # first, then cached
                    C = A @ A
                    self.assertGreaterEqual(8 * C.nnz, 4 << 20)
                    got = C.to_scipy().tocsr()
                    np.testing.assert_array_equal(got.indptr, ref.indptr)
                    np.testing.assert_array_equal(got.indices, ref.indices)
                    np.testing.assert_array_equal(got.data, ref.data)
        finally:
            sla.set_num_threads(None)

    def test_operand_indices_checked(self):
        """An operand whose indices are in CSR order (its pattern checked in
        C against the C matrix of the operation) and one in another order
        (the pattern's copies): products follow in-place writes to the
        indices, through torch and through a numpy view, and other index
        dtypes or layouts take the general path."""
        from sla import _algebra
        for nt in (1, 2):
            sla.set_num_threads(nt)
            try:
                for order in ("csr", "shuffled"):
                    Ms = sp.random(400, 300, density=0.02, format="csr",
                                   random_state=np.random.default_rng(81)).tocoo()
                    perm = np.arange(Ms.nnz) if order == "csr" else \
                        np.random.default_rng(82).permutation(Ms.nnz)
                    row = torch.tensor(Ms.row[perm].astype(np.int64))
                    col = torch.tensor(Ms.col[perm].astype(np.int64))
                    A = sla.SparseTensor(torch.tensor(Ms.data[perm]), row, col, Ms.shape)
                    Ns = sp.random(300, 200, density=0.03, random_state=np.random.default_rng(83))
                    B = sla.SparseTensor.from_scipy(Ns)
                    self.assertEqual(A.pattern.identity, order == "csr")
                    np.testing.assert_allclose((A @ B).to_dense().numpy(),
                                               (Ms @ Ns).toarray(), atol=1e-14)
                    for how in ("torch", "numpy"):
                        r, c = A.row.numpy().copy(), A.col.numpy().copy()
                        k = int(np.argmax(c < 299))
                        if how == "torch":
                            A.col[k] += 1  # another column for one entry
                        else:
                            A.col.numpy()[k] += 1  # no version bump
                        c2 = c.copy()
                        c2[k] += 1
                        ref = sp.coo_matrix((Ms.data[perm], (r, c2)), shape=Ms.shape).tocsr()
                        np.testing.assert_allclose((A @ B).to_dense().numpy(),
                                                   (ref @ Ns).toarray(), atol=1e-14)
                        np.testing.assert_allclose((B.T @ A.T).to_dense().numpy(),
                                                   (ref @ Ns).toarray().T, atol=1e-14)
                        A.col.copy_(torch.tensor(c))
                        np.testing.assert_allclose((A @ B).to_dense().numpy(),
                                                   (Ms @ Ns).toarray(), atol=1e-14)
                    # int32 and strided indices: the general check
                    A32 = sla.SparseTensor(A.values, A.row.to(torch.int32), A.col[:].to(
                        torch.int32), A.shape)
                    np.testing.assert_allclose((A32 @ B).to_dense().numpy(),
                                               (Ms @ Ns).toarray(), atol=1e-14)
                    rc = torch.stack([A.row, A.col], 1)  # row and col as strided views
                    As = sla.SparseTensor(A.values, rc[:, 0], rc[:, 1], A.shape)
                    np.testing.assert_allclose((As @ B).to_dense().numpy(),
                                               (Ms @ Ns).toarray(), atol=1e-14)
                    rc[0, 1] = (rc[0, 1] + 1) % 300
                    c2 = A.col.numpy().copy()
                    c2[0] = rc[0, 1]
                    ref = sp.coo_matrix((Ms.data[perm], (A.row.numpy(), c2)),
                                        shape=Ms.shape).tocsr()
                    np.testing.assert_allclose((As @ B).to_dense().numpy(),
                                               (ref @ Ns).toarray(), atol=1e-14)
            finally:
                sla.set_num_threads(None)
        self.assertTrue(hasattr(_algebra, "_operand"))

    def test_errors(self):
        A, _ = rnd(5, 4, 0.5, 13)
        with self.assertRaises(ValueError):
            A @ A
        with self.assertRaises(ValueError):
            A + A.T
        with self.assertRaises(TypeError):
            A + 1.0
        with self.assertRaises(ValueError):
            A.norm("nuc")


class TestGraph(unittest.TestCase):
    def graph(self):
        # components {0, 2, 4}, {1, 3}, {5}
        row = torch.tensor([0, 2, 4, 1, 5, 0])
        col = torch.tensor([2, 4, 2, 3, 5, 0])
        v = torch.tensor([1.5, 2.0, 2.0, 0.5, 9.0, 3.0], dtype=F64)
        return sla.SparseTensor(v, row, col, (6, 6))

    def test_components_vs_scipy(self):
        A = self.graph()
        n, labels = A.connected_components()
        ns, ls = csgraph.connected_components(A.to_scipy(), directed=True, connection="weak")
        self.assertEqual(n, ns)
        self.assertEqual(labels.tolist(), [0, 1, 0, 1, 0, 2])
        self.assertTrue(A.has_isolated_components())
        self.assertFalse(sla.poisson(2, 5).has_isolated_components())
        R, Rs = rnd(200, 200, 0.004, 14)
        n, labels = R.connected_components()
        ns, ls = csgraph.connected_components(Rs, directed=True, connection="weak")
        self.assertEqual(n, ns)
        # same partition (labels may be numbered differently)
        for k in range(n):
            self.assertEqual(len(set(ls[labels.numpy() == k])), 1)

    def test_split_and_assemble(self):
        A = self.graph()
        A.values.requires_grad_()
        parts = A.to_connected_components()
        self.assertEqual(len(parts), 3)
        self.assertEqual([p.shape for p in parts], [(3, 3), (2, 2), (1, 1)])
        back = parts.block_diag()
        torch.testing.assert_close(back.to_dense(), A.to_dense())
        back.to_dense().sum().backward()
        torch.testing.assert_close(A.values.grad, torch.ones(6, dtype=F64))
        plain = sla.SparseTensorList(list(parts)).block_diag()
        self.assertEqual(plain.shape, (6, 6))

    def test_laplacian_degree(self):
        A = self.graph()
        D = A.to_dense()
        L = A.laplacian()
        torch.testing.assert_close(L.to_dense(), torch.diag(D.sum(1)) - D)
        S = (A + A.T) * 0.5
        Ls = csgraph.laplacian(S.to_scipy().toarray())
        np.testing.assert_allclose(S.laplacian().to_dense().numpy(), Ls, atol=1e-14)
        torch.testing.assert_close(A.degree(), D.sum(1) - torch.diagonal(D))
        torch.testing.assert_close(A.degree(weighted=False),
                                   torch.tensor([1, 1, 1, 0, 1, 0], dtype=F64))
        va = A.values.clone().requires_grad_()
        mk = lambda v: sla.SparseTensor(v, A.row, A.col, A.shape)  # noqa: E731
        self.assertTrue(gradcheck(lambda v: mk(v).laplacian().values, (va,)))
        vb = torch.randn((2, A.nnz), dtype=F64, requires_grad=True)
        self.assertTrue(gradcheck(lambda v: mk(v).laplacian().values, (vb,)))
        self.assertTrue(gradcheck(lambda v: mk(v).degree(), (vb,)))


if __name__ == "__main__":
    unittest.main()
