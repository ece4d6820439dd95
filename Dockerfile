# The krm-catalog image: one static binary on an empty base, so it builds on a machine that can pull
# nothing. Build the binary first (scripts/build-image.sh does all three steps):
#
#   CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o dist/krm-catalog ./cmd/krm-catalog
#   cp /etc/ssl/certs/ca-certificates.crt dist/
#   docker build -t krm-catalog:dev .
FROM scratch
COPY dist/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY dist/krm-catalog /krm-catalog
# no shell, no package manager, not root
USER 65532:65532
ENV HOME=/tmp XDG_CACHE_HOME=/tmp/cache
EXPOSE 8080
ENTRYPOINT ["/krm-catalog"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--log-format", "json"]
