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

# 3. A Compose-style secret: the file is bind-mounted at /run/secrets/db_password
#    (as Compose and Swarm mount `secrets:`) and DB_PASSWORD_FILE names it, as for
#    official images; --file-env DB_PASSWORD sets DB_PASSWORD from the file (its
#    trailing newline removed) and removes DB_PASSWORD_FILE. No shell involved.
docker run --rm --volume "$here/secrets/db_password:/run/secrets/db_password:ro" \
  --env DB_PASSWORD_FILE=/run/secrets/db_password "$IMAGE" \
  --file-env DB_PASSWORD -- /app --listen=:8080
