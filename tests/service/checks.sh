# Sourced by the service tests that run many checks and report them all before failing:
#   check ok|fail MESSAGE   prints "ok   MESSAGE" or "FAIL MESSAGE" (any word but ok fails) and
#                           counts the failures in $fails.
fails=0
check() {
  if [ "$1" = ok ]; then echo "ok   $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi
}
