#!/usr/bin/env bash
# Rebuilds static/vendor/plotly/plotly-dpportal.min.js, the plotly.js bundle of the
# public release pages: plotly.js's own partial-bundle task (tasks/partial_bundle.mjs
# of the npm package) with only the trace types the pages draw -- bar, heatmap and
# scatter -- and without the world-calendars component, whose start-up cost was most
# of the time a first visit spent evaluating the cartesian dist bundle (issue 11,
# point 7). Needs node and npm (the npm registry); not needed to run or test dpportal:
# the built file is vendored.
#   PLOTLY_VERSION   default 3.1.0 (keep it matching the plotly wheel's plotly.js)
set -euo pipefail
VERSION="${PLOTLY_VERSION:-3.1.0}"
TRACES="bar,heatmap,scatter"
DEST="$(cd "$(dirname "$0")/.." && pwd)/static/vendor/plotly"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "plotly.js@${VERSION}" >/dev/null
tar xzf "plotly.js-${VERSION}.tgz"
cd package
# the runtime dependencies, then only the build tools of its partial-bundle task (its
# other devDependencies are test and CI tools, some with native builds)
node -e 'const f="package.json",p=require("./"+f);delete p.devDependencies;require("fs").writeFileSync(f,JSON.stringify(p))'
npm install --ignore-scripts --no-audit --no-fund --silent
npm install --no-save --ignore-scripts --no-audit --no-fund --silent \
  esbuild@0.25.5 esbuild-plugin-environment@0.4.0 esbuild-plugin-glsl@1.2.2 \
  esbuild-style-plugin@1.6.3 esbuild-plugin-browserify-adapter@0.1.4 prepend-file@2.0.1 \
  fs-extra@10.1.0 run-series@1.1.9 minimist@1.2.8 through2@4.0.2 stream-browserify@3.0.0
cat > build-dpportal.mjs <<EOF
import runSeries from 'run-series';
import partialBundle from './tasks/partial_bundle.mjs';
const tasks = [];
partialBundle(tasks, {
    name: 'dpportal', index: 'lib/index-dpportal.js', deleteIndex: true,
    dist: 'dist/plotly-dpportal.js', distMin: 'dist/plotly-dpportal.min.js',
    traceList: '${TRACES}'.split(','), calendars: false,
});
runSeries(tasks, (err) => { if (err) throw err; });
EOF
node build-dpportal.mjs
cp dist/plotly-dpportal.min.js "$DEST/plotly-dpportal.min.js"
cp LICENSE "$DEST/LICENSE"
echo "wrote $DEST/plotly-dpportal.min.js (plotly.js ${VERSION}: ${TRACES})"
# its global rules as a static sheet, linked so that plotly.js makes no inline <style> (CSP)
python3 "$DEST/../../../scripts/plotly_global_css.py"
