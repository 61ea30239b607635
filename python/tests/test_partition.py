"""Row partitions (SparseTensor.partition, extract_partition) against
NumPy/dense references: balance, METIS's edge cut, compact geometric
parts, local matvec + halo reproducing the global rows, gradients."""

import os
import sys
import unittest

import numpy as np
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

F64 = torch.float64


def shuffled_poisson(N, seed):
    """2-D Poisson with rows renumbered at random and unsymmetric values;
    the grid coordinates of the new rows."""
    A = sla.poisson(2, N)
    rng = np.random.default_rng(seed)
    perm = torch.from_numpy(rng.permutation(N * N))
    v = A.values * torch.from_numpy(1.0 + 0.25 * rng.uniform(-1, 1, A.nnz))
    B = sla.SparseTensor(v, perm[A.row], perm[A.col], A.shape)
    old = torch.arange(N * N)
    xy = torch.empty(N * N, 2, dtype=F64)
    xy[perm, 0] = (old % N).to(F64)
    xy[perm, 1] = (old // N).to(F64)
    return B, xy


def edge_cut(A, part):
    r, c = A.row, A.col
    return int(((part[r] != part[c]) & (r != c)).sum())


class TestPartition(unittest.TestCase):
    def setUp(self):
        self.A, self.xy = shuffled_poisson(24, 3)
        self.n = 24 * 24

    def check_balance(self, part, P, exact=True):
        self.assertEqual(part.shape, (self.n,))
        self.assertTrue(bool(((part >= 0) & (part < P)).all()))
        counts = torch.bincount(part, minlength=P)
        if exact:
            self.assertLessEqual(int(counts.max() - counts.min()), 1)
        else:
            self.assertLessEqual(int(counts.max()), 1.1 * self.n / P)

    def test_contiguous(self):
        p = self.A.partition(5, "contiguous")
        self.check_balance(p, 5)
        self.assertTrue(bool((p[1:] >= p[:-1]).all()))

    def test_geometric_compact(self):
        cut_block = edge_cut(self.A, self.A.partition(8, "contiguous"))
        for method in ("rcb", "hilbert"):
            p = self.A.partition(8, method, coords=self.xy)
            self.check_balance(p, 8)
            # each part's bounding box holds little more than its 72 points
            area = 0.0
            for q in range(8):
                pts = self.xy[p == q]
                ext = pts.max(0).values - pts.min(0).values + 1
                area += float(ext.prod())
            self.assertLessEqual(area, 1.5 * self.n, method)
            self.assertLess(edge_cut(self.A, p), cut_block / 4, method)
        # 1-D coordinates: hilbert is the sorted order
        x = self.xy[:, 0] + 1e-3 * self.xy[:, 1]
        p = self.A.partition(4, "hilbert", coords=x)
        order = torch.argsort(x)
        self.assertTrue(bool((p[order][1:] >= p[order][:-1]).all()))

    @unittest.skipUnless(sla.has_feature("metis"), "libsla without METIS")
    def test_metis_cut(self):
        p = self.A.partition(8, "metis")
        self.check_balance(p, 8, exact=False)
        cut, cut_block = edge_cut(self.A, p), edge_cut(self.A, self.A.partition(8, "contiguous"))
        self.assertLess(cut, cut_block / 4)

    def test_metis_missing(self):
        if sla.has_feature("metis"):
            self.skipTest("libsla has METIS")
        with self.assertRaises(sla.SlaUnavailableError):
            self.A.partition(4, "metis")

    def test_extract_reproduces_matvec(self):
        A, n = self.A, self.n
        g = torch.Generator().manual_seed(1)
        Ab = sla.SparseTensor(torch.randn(2, A.nnz, dtype=F64, generator=g), A.row, A.col, A.shape)
        x = torch.randn(n, dtype=F64, generator=g)
        y = Ab @ x
        D = Ab.to_dense()
        for method in ("contiguous", "rcb") + (("metis",) if sla.has_feature("metis") else ()):
            part = Ab.partition(5, method, coords=self.xy)
            seen, sends, recvs = torch.zeros(n, dtype=torch.int64), {}, {}
            for k in range(5):
                Al, info = Ab.extract_partition(part, k)
                own, gh = info["owned"], info["ghost"]
                seen[own] += 1
                self.assertEqual(Al.shape, (2, own.numel(), own.numel() + gh.numel()))
                self.assertTrue(bool((part[own] == k).all()))
                self.assertTrue(bool((part[gh] == info["ghost_owner"]).all()))
                self.assertTrue(bool((info["ghost_owner"] != k).all()))
                # the local matrix is the dense block (rows owned, columns owned + ghosts)
                cols = torch.cat([own, gh])
                torch.testing.assert_close(Al.to_dense(), D[:, own][:, :, cols], rtol=0, atol=0)
                yl = Al @ x[cols]  # local matvec with the halo values
                torch.testing.assert_close(yl, y[:, own], rtol=1e-14, atol=1e-13)
                # every off-part column of the owned rows is a ghost, and only those
                rows = torch.isin(A.row, own)
                off = torch.unique(A.col[rows][part[A.col[rows]] != k])
                self.assertTrue(torch.equal(torch.sort(gh).values, off))
                sp_, rp = info["send_ptr"], info["recv_ptr"]
                for q in range(5):
                    sends[(k, q)] = own[info["send_rows"][sp_[q]:sp_[q + 1]]]
                    recvs[(q, k)] = gh[rp[q]:rp[q + 1]]
            self.assertTrue(bool((seen == 1).all()))
            for key, s in sends.items():
                self.assertTrue(torch.equal(s, recvs[key]), (method, key))

    def test_extract_gradient(self):
        A, xy = shuffled_poisson(5, 8)
        part = A.partition(3, "rcb", coords=xy)
        g = torch.Generator().manual_seed(2)
        x = torch.randn(25, dtype=F64, generator=g)

        def f(v):
            B = A.with_values(v)
            out = []
            for k in range(3):
                Al, info = B.extract_partition(part, k)
                out.append(Al @ x[torch.cat([info["owned"], info["ghost"]])])
            return torch.cat(out)

        v = A.values.clone().requires_grad_(True)
        self.assertTrue(gradcheck(f, (v,), eps=1e-6, atol=1e-8))

    def test_errors(self):
        with self.assertRaises(ValueError):
            self.A.partition(4, "spectral")
        with self.assertRaises(ValueError):
            self.A.partition(4, "rcb")
        with self.assertRaises(ValueError):
            self.A.partition(4, "rcb", coords=self.xy[:10])
        with self.assertRaises(sla.SlaError):
            self.A.partition(self.n + 1, "contiguous")
        part = self.A.partition(4, "contiguous")
        with self.assertRaises(sla.SlaError):
            self.A.extract_partition(part, 4)
        R = sla.SparseTensor(torch.ones(2, dtype=F64), [0, 1], [0, 2], (2, 3))
        with self.assertRaises(ValueError):
            R.partition(2, "contiguous")


if __name__ == "__main__":
    unittest.main()
