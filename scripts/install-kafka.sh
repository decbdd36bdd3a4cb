#!/usr/bin/env bash
# Installs the Apache Kafka broker that testenv starts for the Kafka tests:
# the jars of org.apache.kafka:kafka_2.13 and its dependencies, resolved
# from Maven Central with Maven (mvn; a few minutes the first time, about
# 45 jars, 45 MB). Java 17 runs them. Nothing else is downloaded.
# Idempotent: does nothing when the stamp of this version is there.
#
# Where: $DELTAKIT_KAFKA_HOME, default ~/.cache/deltakit/kafka; the jars go
# to lib/ under it and the stamp "installed" (holding the version) next to
# it. testenv looks in the same place.
#
# Apache Kafka is Apache-2.0. deltakit never links it: tests run the broker
# as a separate Java process and talk the Kafka protocol to it (franz-go).
set -euo pipefail
version=4.1.1
# Pinned so that the resolution does not depend on Maven's default plugin.
dependency_plugin=3.8.1

home=${DELTAKIT_KAFKA_HOME:-$HOME/.cache/deltakit/kafka}
stamp="$home/installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "kafka_2.13 $version" ] && [ -d "$home/lib" ]; then
  echo "kafka: already installed at $home (kafka_2.13 $version)"
  exit 0
fi
command -v mvn > /dev/null || { echo "kafka: mvn (Maven) is needed to install the broker jars" >&2; exit 1; }
command -v java > /dev/null || { echo "kafka: java (17 or later) is needed to run the broker" >&2; exit 1; }

mkdir -p "$home"
tmp=$(mktemp -d "$home/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>deltakit</groupId>
  <artifactId>kafka-broker-for-tests</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
EOF
echo "kafka: resolving org.apache.kafka:kafka_2.13:$version with Maven into $home/lib"
(cd "$tmp" && mvn -q -B "org.apache.maven.plugins:maven-dependency-plugin:$dependency_plugin:copy-dependencies" \
  -DincludeScope=runtime -DoutputDirectory="$tmp/lib")
ls "$tmp/lib"/kafka_2.13-"$version".jar > /dev/null
# Swap the new lib/ in, then write the stamp: an interrupted install leaves
# no stamp, and the next run installs again.
rm -f "$stamp"
rm -rf "$home/lib"
mv "$tmp/lib" "$home/lib"
echo "kafka_2.13 $version" > "$stamp.tmp.$$"
mv -f "$stamp.tmp.$$" "$stamp"
echo "kafka: installed kafka_2.13 $version ($(ls "$home/lib" | wc -l) jars, $(du -sh "$home/lib" | cut -f1))"
