#!/bin/sh
# berth: runs Berth (@JAR@) on a Java 25 or later runtime, whichever `java` comes first on PATH.
# Installed by `berth setup` or `berth launcher`; rerun either after moving the jar.
# Looks at, in order: $BERTH_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm/*, then a runtime shipped next to the jar (runtime/).
# Extra JVM options: $BERTH_JAVA_OPTS.
BERTH_JAR='@JAR@'

# true when $1 is a Java home whose bin/java is version 25 or later (read from its release file, else asked)
suitable() {
  [ -n "$1" ] && [ -x "$1/bin/java" ] || return 1
  v=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$1/release" 2>/dev/null)
  [ -n "$v" ] || v=$("$1/bin/java" -version 2>&1 | sed -n '1s/.* version "\([0-9][0-9]*\).*/\1/p')
  [ -n "$v" ] && [ "$v" -ge 25 ] 2>/dev/null
}

if [ ! -f "$BERTH_JAR" ]; then
  echo "berth: $BERTH_JAR is gone; rebuild it (./run.sh) or run \`java -jar NEW/berth.jar launcher\` to point this launcher at it" >&2
  exit 127
fi
for home in "${BERTH_JAVA_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/* "${BERTH_JAR%/*}/runtime"; do
  if suitable "$home"; then
    # shellcheck disable=SC2086 # BERTH_JAVA_OPTS is a list of options
    exec "$home/bin/java" ${BERTH_JAVA_OPTS:-} -jar "$BERTH_JAR" "$@"
  fi
done
echo "berth: no Java 25 or later found (looked at \$BERTH_JAVA_HOME, \$JAVA_HOME, /usr/lib/jvm/*, ${BERTH_JAR%/*}/runtime);" \
  "install Temurin 25 (or any JDK 25+) or set BERTH_JAVA_HOME" >&2
exit 127
