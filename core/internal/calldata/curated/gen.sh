#!/usr/bin/env bash
# gen.sh regenerates ../curated.json, the functions govgate decodes without
# any ABI from the operator, from the ABIs that the projects publish on npm
# (at the versions pinned in gen.js) plus the few that are published only
# as source, copied into gen.js with where they come from. It needs node
# and npm (the npm registry, or a warm npm cache); the packages are
# unpacked under .packs/, which git ignores. Run it from anywhere:
#
#	bash core/internal/calldata/curated/gen.sh
set -euo pipefail
cd "$(dirname "$0")"
node gen.js
