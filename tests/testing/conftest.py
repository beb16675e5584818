"""Makes the example processors of this folder importable (`import kit_examples`): test folders are
not packages under `--import-mode=importlib`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
