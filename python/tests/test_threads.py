"""sla's thread count inside Python: it follows torch.get_num_threads()
unless sla.set_num_threads fixed it, except that torch's own default of 1
on a machine with more usable CPUs (a miscount) is replaced by those CPUs."""

import os
import sys
import threading
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _lib  # noqa: E402


class TestThreads(unittest.TestCase):
    def setUp(self):
        self.torch_threads = torch.get_num_threads()
        self.saved = (_lib._TORCH_DEFAULT, _lib._THREAD_ENV, _lib._CPUS)
        sla.set_num_threads(None)

    def tearDown(self):
        _lib._TORCH_DEFAULT, _lib._THREAD_ENV, _lib._CPUS = self.saved
        torch.set_num_threads(self.torch_threads)
        sla.set_num_threads(None)

    def test_follows_torch(self):
        _lib._THREAD_ENV, _lib._TORCH_DEFAULT = False, 3  # a default torch chose itself
        for k in (1, 2, 4):
            torch.set_num_threads(k)
            self.assertEqual(sla.get_num_threads(), k)
        # another Python thread has its own context, with the same rule
        got = []
        t = threading.Thread(target=lambda: got.append(sla.get_num_threads()))
        t.start()
        t.join()
        self.assertEqual(got, [4])

    def test_miscounted_default(self):
        # torch's own default of 1 (cpuinfo found one core) with 3 usable CPUs
        _lib._TORCH_DEFAULT, _lib._THREAD_ENV, _lib._CPUS = 1, False, 3
        torch.set_num_threads(1)
        self.assertEqual(sla.get_num_threads(), 3)
        # not when OMP_NUM_THREADS (or MKL_NUM_THREADS) asked for it
        _lib._THREAD_ENV = True
        self.assertEqual(sla.get_num_threads(), 1)
        # not on a machine with one usable CPU
        _lib._THREAD_ENV, _lib._CPUS = False, 1
        self.assertEqual(sla.get_num_threads(), 1)
        # not when torch's default was more and the user asked for 1
        _lib._TORCH_DEFAULT, _lib._CPUS = 2, 3
        self.assertEqual(sla.get_num_threads(), 1)

    def test_explicit(self):
        _lib._THREAD_ENV, _lib._TORCH_DEFAULT = False, 3
        torch.set_num_threads(2)
        sla.set_num_threads(1)
        self.assertEqual(sla.get_num_threads(), 1)
        torch.set_num_threads(4)
        self.assertEqual(sla.get_num_threads(), 1)  # fixed: torch's changes do not matter
        sla.set_num_threads(None)
        self.assertEqual(sla.get_num_threads(), 4)
        with self.assertRaises(ValueError):
            sla.set_num_threads(-1)
        # the kernels run with the count: a product at 1 and at 3 threads agree bitwise
        A = sla.poisson(2, 40)
        sla.set_num_threads(1)
        c1 = (A @ A).values
        sla.set_num_threads(3)
        c3 = (A @ A).values
        self.assertTrue(torch.equal(c1, c3))


if __name__ == "__main__":
    unittest.main()
