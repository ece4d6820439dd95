module github.com/Masterminds/semver/v3

go 1.21
