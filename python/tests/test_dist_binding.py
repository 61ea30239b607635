"""sla.DSparseTensor without MPI ranks: `import sla` does not import mpi4py,
and a missing mpi4py gives a clear ImportError. The distributed tests
proper run under mpirun (python/tests/mpi/test_dsparse.py, ctest
test_python_mpi_np*)."""

import os
import subprocess
import sys
import unittest
from unittest import mock

import sla
from sla import _dist


class TestDistBinding(unittest.TestCase):
    def test_import_sla_does_not_import_mpi4py(self):
        r = subprocess.run([sys.executable, "-c",
                            "import sys, sla; print(hasattr(sla, 'DSparseTensor'), "
                            "'mpi4py' in sys.modules)"],
                           capture_output=True, text=True, env=dict(os.environ), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["True", "False"])

    def test_missing_mpi4py_is_a_clear_error(self):
        saved = dict(_dist._state)
        _dist._state.clear()
        try:
            with mock.patch.dict(sys.modules, {"mpi4py": None, "mpi4py.MPI": None}):
                if sla.has_feature("mpi"):
                    with self.assertRaisesRegex(ImportError, "needs mpi4py.*python3-mpi4py"):
                        sla.DSparseTensor.load("nothing", None)
                else:
                    with self.assertRaisesRegex(sla.SlaUnavailableError, "built without MPI"):
                        sla.DSparseTensor.load("nothing", None)
        finally:
            _dist._state.clear()
            _dist._state.update(saved)


if __name__ == "__main__":
    unittest.main()
