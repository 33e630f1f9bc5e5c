# compute's images for people who build with Docker (BuildKit). `make images`
# builds the same images without a daemon; internal/images/dockerfile_test.go
# keeps the two in step: the build stage runs the same packer
# (hack/images --stage), so each image stage copies exactly the file system
# `make images` packs, and USER, ENTRYPOINT and the labels must match.
#
#   docker build --target compute-manager \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) \
#     -t compute-manager .
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG SOURCE_DATE_EPOCH=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go run ./hack/images --stage /out --platform ${TARGETOS}/${TARGETARCH} \
    --version ${VERSION} --revision ${REVISION} --created ${SOURCE_DATE_EPOCH}

FROM scratch AS compute-manager
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /out/compute-manager/ /
USER 65532:65532
WORKDIR /
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.title=compute-manager \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.source=https://github.com/citycells/compute \
      org.opencontainers.image.created=${CREATED}
ENTRYPOINT ["/compute-manager"]

FROM scratch AS compute-quota
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /out/compute-quota/ /
USER 65532:65532
WORKDIR /
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.title=compute-quota \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.source=https://github.com/citycells/compute \
      org.opencontainers.image.created=${CREATED}
ENTRYPOINT ["/compute-quota"]
