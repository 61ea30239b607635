"""A few steps of examples/inverse_coefficient.py: the loss and the error of
kappa must go down."""

import importlib.util
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "inverse_coefficient.py")


class ExampleTests(unittest.TestCase):
    def test_inverse_coefficient_few_steps(self):
        spec = importlib.util.spec_from_file_location("inverse_coefficient", EXAMPLE)
        ex = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ex)
        out = io.StringIO()
        r = ex.run(steps=150, N=16, every=50, out=out)
        losses = r["losses"]
        self.assertEqual(len(losses), 151)
        self.assertLess(losses[-1], 1e-2 * losses[0])
        self.assertLess(losses[75], losses[0])
        text = out.getvalue()
        self.assertIn("rel.err", text)
        self.assertIn("result: 150 steps", text)
        # the error of kappa starts at ||1 - kappa*|| / ||kappa*|| (about 24 %) and falls
        first = float(text.split("\n")[2].split()[3].rstrip("%"))
        self.assertGreater(first, 20.0)
        self.assertLess(100 * r["rel_l2_error"], 0.7 * first)


if __name__ == "__main__":
    unittest.main()
