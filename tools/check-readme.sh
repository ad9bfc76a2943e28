#!/bin/sh
# Compiles and runs the first ```c block of README.md against lib/ (and runs
# the first ```python block), so the
# front-page example can never rot.
set -e
cd "$(dirname "$0")/.."
make -s lib/libfoundry.a
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' README.md > "$dir/example.c"
[ -s "$dir/example.c" ] || { echo "no C example in README.md" >&2; exit 1; }
${CC:-cc} -std=c11 -Wall -Wextra -pedantic -Werror -Iinclude \
    "$dir/example.c" lib/libfoundry.a -lpthread -lm -o "$dir/example"
"$dir/example"
echo "README example: ok"

# ... and the first ```python block, with the project's .venv (make python).
make -s python
awk '/^```python$/{on=1; next} /^```$/{if (on) exit} on' README.md > "$dir/example.py"
[ -s "$dir/example.py" ] || { echo "no Python example in README.md" >&2; exit 1; }
[ "$(wc -l < "$dir/example.py")" -le 20 ] || { echo "README Python loop grew" >&2; exit 1; }
.venv/bin/python "$dir/example.py"
echo "README Python example: ok"
