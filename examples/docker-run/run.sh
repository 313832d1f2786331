#!/usr/bin/env bash
# Mode 3: `docker run` on a laptop, no manifest: Docker's --volume mounts the
# directory holding app.env read-only, envshim's --env-file and --env build the
# environment. IMAGE: an image whose ENTRYPOINT is ["/envshim", "run"] and that
# has no manifest at /etc/envshim/manifest.json, like mode 1's (examples/baked-in).
set -euo pipefail
IMAGE=${IMAGE:-registry.example.com/app-with-envshim:1.0}
here=$(cd "$(dirname "$0")" && pwd)

# 1. Preview what the program would get (names and sources; add --show-values to see values).
docker run --rm --volume "$here:/config:ro" --entrypoint /envshim "$IMAGE" \
  render --env-file /config/app.env

# 2. Run the program with that environment. The words after the image go to the
#    ENTRYPOINT `envshim run`: its options, then the program line after --.
#    envshim replaces itself with /app (PID 1).
docker run --rm --volume "$here:/config:ro" --env DB_HOST=host.docker.internal "$IMAGE" \
  --env-file /config/app.env \
  --env 'DATABASE_URL=postgres://$(DB_USER):$(DB_PASSWORD)@$(DB_HOST):5432/app' \
  -- /app --listen=:8080 --log-level='$(LOG_LEVEL)'
