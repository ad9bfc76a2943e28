"""Regenerates every reference file under tests/data (make refdata)."""
import glob
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
for script in sorted(glob.glob(os.path.join(here, "gen_*.py"))):
    if os.path.basename(script) != "gen_all.py":
        runpy.run_path(script, run_name="__main__")
