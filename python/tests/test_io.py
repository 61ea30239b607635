"""sla.load_mtx / save_mtx (Matrix Market through the C reader and writer)
and sla.save / load (exact .npz), against SciPy's reader and the tensors
themselves."""
import os
import sys
import tempfile
import unittest

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sla  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")


class MatrixMarketTests(unittest.TestCase):
    def test_real_files_match_scipy(self):
        for name in ["bcsstk01.mtx", "west0067.mtx", "lp_e226.mtx", "can_24.mtx",
                     "Franz6_id1959_aug.mtx"]:
            A = sla.load_mtx(os.path.join(DATA, name))
            R = sp.coo_matrix(scipy.io.mmread(os.path.join(DATA, name))).tocsr()
            self.assertEqual(tuple(A.shape), R.shape, name)
            D = A.to_scipy().tocsr()
            self.assertEqual(abs(D - R).max() if D.nnz else 0.0, 0.0, name)

    def test_round_trip_exact_with_duplicates_and_batch(self):
        row = torch.tensor([0, 2, 1, 0, 2])
        col = torch.tensor([1, 0, 3, 1, 3])
        vals = torch.tensor([[1.0 / 3, np.pi, -2.5e-300, 1e300, 7.0],
                             [2.0, 3.0, 4.0, 5.0, 6.0]], dtype=torch.float64)
        A = sla.SparseTensor(vals, row, col, (3, 4))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "a.mtx")
            with self.assertRaisesRegex(ValueError, "index"):
                sla.save_mtx(p, A)
            for ib in range(2):
                sla.save_mtx(p, A, index=ib)
                B = sla.load_mtx(p)
                self.assertEqual(tuple(B.shape), (3, 4))
                self.assertTrue(torch.equal(B.to_dense(), A[ib].to_dense()))  # duplicates summed, exact

    def test_bad_files_name_the_line(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.mtx")
            with open(p, "w") as f:
                f.write("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n")
            with self.assertRaisesRegex(sla.SlaError, r"bad\.mtx:3: row index 3 out of range"):
                sla.load_mtx(p)
            with self.assertRaises(sla.SlaError):
                sla.load_mtx(os.path.join(d, "missing.mtx"))
            A = sla.SparseTensor(torch.tensor([float("nan")], dtype=torch.float64),
                                 torch.tensor([0]), torch.tensor([0]), (1, 1))
            with self.assertRaises(sla.SlaError):
                sla.save_mtx(os.path.join(d, "nan.mtx"), A)
            self.assertFalse(os.path.exists(os.path.join(d, "nan.mtx")))


class BinaryTests(unittest.TestCase):
    def test_tensor_and_list_exact(self):
        g = torch.Generator().manual_seed(3)
        row = torch.tensor([0, 1, 1, 2, 0])
        col = torch.tensor([0, 1, 1, 2, 2])
        A = sla.SparseTensor(torch.randn(2, 3, 5, generator=g, dtype=torch.float64), row, col, (3, 3))
        F = sla.SparseTensor(torch.randn(5, generator=g).float(), row, col, (3, 4))
        Lst = sla.SparseTensorList([sla.poisson(2, 4), F])
        with tempfile.TemporaryDirectory() as d:
            for obj in (A, F):
                p = os.path.join(d, "t.npz")
                sla.save(p, obj)
                B = sla.load(p)
                self.assertEqual(B.values.dtype, obj.values.dtype)
                self.assertTrue(torch.equal(B.values, obj.values))
                self.assertTrue(torch.equal(B.row, obj.row) and torch.equal(B.col, obj.col))
                self.assertEqual(tuple(B.shape), tuple(obj.shape))
            p = os.path.join(d, "l.npz")
            sla.save(p, Lst)
            M = sla.load(p)
            self.assertEqual(len(M), 2)
            for a, b in zip(Lst, M):
                self.assertTrue(torch.equal(a.to_dense(), b.to_dense()))
            np.savez(os.path.join(d, "other.npz"), x=np.zeros(2))
            with self.assertRaisesRegex(ValueError, "not a file written by sla.save"):
                sla.load(os.path.join(d, "other.npz"))
            with self.assertRaises(TypeError):
                sla.save(p, torch.zeros(2))


if __name__ == "__main__":
    unittest.main()
