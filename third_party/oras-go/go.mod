module oras.land/oras-go/v2

go 1.26.0

require (
	github.com/opencontainers/go-digest v1.0.0
	github.com/opencontainers/image-spec v1.1.1
	golang.org/x/sync v0.24.0
)
