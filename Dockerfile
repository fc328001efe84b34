# Both cluster-mode images, for users who have Docker; one shared base, two targets:
#   docker build --target service -t ffmpeg-operator .           API (default CMD) and operator
#   docker build --target runner -t ffmpeg-operator-runner .     one FfmpegCommand step per container
#
# The same images as `scripts/build-images.sh` builds without Docker (localhost/ffmpeg-operator and
# localhost/ffmpeg-operator-runner): the development machines have no container engine and build them
# with that script, so this file is not built there. Keep the two in step: same layers (Debian
# bookworm with ffmpeg and bubblewrap, Node 22, production node_modules, compiled dist/ + seccomp.bpf),
# same settings. The images differ only in user, writable folder and command.
#
# service: user 10000 (numeric, for runAsNonRoot; set runAsGroup too). Its one writable place is the
#   data folder FFOP_DATA_DIR=/data (the confinement's start-up self-test, working folders): mount an
#   emptyDir there with readOnlyRootFilesystem: true. The operator runs node /app/dist/operator/main.js
#   and probes files with ffprobe confined by bubblewrap, which is why ffmpeg and bubblewrap are here.
# runner: the Job's pod spec is expected to provide
#   - an emptyDir mounted at /work: the only writable place. The runner writes only to
#     FFOP_WORK_ROOT=/work and TMPDIR=/work/tmp (mount the same emptyDir there with subPath: tmp,
#     which creates the folder), and runs compiled JavaScript (nothing compiles or caches at run
#     time), so securityContext.readOnlyRootFilesystem: true works.
#   - runAsNonRoot: true; the image's user is numeric (10001), so the kubelet can check it; set
#     runAsGroup too.
#   - no ServiceAccount token (the runner ServiceAccount sets automountServiceAccountToken: false).
ARG NODE_VERSION=22.23.3

# --- build: compile TypeScript to dist/ (scripts/build.sh), then the production node_modules ---
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No lifecycle scripts: nothing the application needs builds at install time.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.sh scripts/
COPY api/ api/
COPY operator/ operator/
COPY core/ core/
COPY runner-image/ runner-image/
RUN bash scripts/build.sh \
    && find dist -name '*.map' -delete && rm -f dist/.tsbuildinfo
# Production packages only, without type declarations, source maps and the compilers (typescript is
# an optional peer of valibot; tsx and esbuild only run the sources, which the image does not hold).
RUN rm -rf node_modules \
    && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && rm -rf node_modules/typescript node_modules/tsx node_modules/esbuild node_modules/@esbuild \
    && find node_modules -path '*/swagger-ui-dist' -prune -o -type f \
       \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -exec rm -f {} +

# --- the seccomp filter, compiled once with libseccomp's Python binding (the image needs no python) ---
FROM debian:bookworm-slim AS seccomp
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-seccomp \
    && rm -rf /var/lib/apt/lists/*
COPY core/confine/seccomp-filter.py /seccomp-filter.py
RUN /usr/bin/python3 /seccomp-filter.py > /seccomp.bpf

FROM node:${NODE_VERSION}-bookworm-slim AS node

# --- what both images hold ---
FROM debian:bookworm-slim AS base
# Debian's ffmpeg/ffprobe and bubblewrap, which confines them. Unpinned on purpose: bookworm-security
# replaces the package version, and a pinned one would stop resolving. usr-is-merged keeps usrmerge
# (and perl) out. Mesa's OpenGL drivers (and LLVM, ~160 MB) come in through libGL, which ffmpeg links
# but never uses without a display: removed (--force-depends: nothing else needs them). Named users
# for the numeric ids the two images run as. A small common set of fonts (docs/api.md, "Fonts").
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ffmpeg bubblewrap ca-certificates usr-is-merged \
       fonts-dejavu-core fonts-liberation2 fonts-open-sans \
    && dpkg --purge --force-depends libgl1-mesa-dri libllvm15 libz3-4 \
    && rm -rf /var/lib/apt/lists/* /var/log/* \
    && printf '%s\n' 'ffop:x:10000:10000:ffmpeg-operator:/data:/usr/sbin/nologin' \
       'runner:x:10001:10001:ffmpeg-operator runner:/work:/usr/sbin/nologin' >> /etc/passwd \
    && printf '%s\n' 'ffop:x:10000:' 'runner:x:10001:' >> /etc/group
# Node only (no npm, no corepack).
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=build /src/node_modules /app/node_modules
# package.json: "type": "module" for dist/.
COPY --from=build /src/package.json /app/package.json
COPY --from=build /src/dist /app/dist
COPY --from=seccomp /seccomp.bpf /app/seccomp.bpf

# MALLOC_ARENA_MAX: glibc's default of 8 malloc arenas per core kept about 10 MiB more resident in the
# service under load, for no speed we could measure. Fixed MMAP and TRIM thresholds (glibc otherwise
# raises them as the process runs) give freed memory back to the system: about 20 MiB less.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=1048576 \
    FFMPEG_PATH=/usr/bin/ffmpeg \
    FFPROBE_PATH=/usr/bin/ffprobe \
    FFOP_SECCOMP_PROGRAM=/app/seccomp.bpf

# --- the runner image ---
FROM base AS runner
ENV FFOP_WORK_ROOT=/work \
    TMPDIR=/work/tmp
# /work exists and belongs to the runner even when nothing is mounted there (docker run).
RUN mkdir -p /work/tmp && chown -R 10001:10001 /work
USER 10001:10001
WORKDIR /work
VOLUME ["/work"]
ENTRYPOINT ["node", "/app/dist/runner-image/main.js"]

# --- the service image (last: the default target) ---
FROM base AS service
ENV FFOP_DATA_DIR=/data
# /data exists and belongs to the service even when nothing is mounted there (docker run).
RUN mkdir -p /data && chown 10000:10000 /data
USER 10000:10000
WORKDIR /app
EXPOSE 8080
CMD ["node", "/app/dist/api/cluster/main.js"]
