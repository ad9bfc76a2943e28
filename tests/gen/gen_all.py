"""Regenerates every reference file under tests/data (make refdata)."""
import glob
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import refgen  # noqa: E402

for script in sorted(glob.glob(os.path.join(here, "gen_*.py"))):
    if os.path.basename(script) != "gen_all.py":
        # a fresh shared generator per script, so each writes the same data
        # whether run alone or from here
        refgen.rng = refgen.new_rng()
        runpy.run_path(script, run_name="__main__")
