# The shell tests' shared helpers, sourced by each script (from its own folder, whatever the build folder):
# pass and fail count the checks; every failure prints one "FAIL: ..." line.
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# check "description" 'shell test': the test evaluated in the caller's variables (eval: the quotes keep it one word)
check() { if eval "$2"; then ok; else bad "$1"; fi; }
