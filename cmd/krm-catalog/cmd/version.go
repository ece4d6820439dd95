package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time: go build -ldflags "-X github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd.version=v1.2.3".
var (
	version = ""
	commit  = ""
)

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && v.Commit == "" {
				v.Commit = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var format *outputFormat
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of krm-catalog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if err := format.check(); err != nil {
				return err
			}
			switch format.value {
			case "json":
				return writeJSON(cmd.OutOrStdout(), v)
			case "text":
				s := fmt.Sprintf("krm-catalog %s (%s, %s", v.Version, v.GoVersion, v.Platform)
				if v.Commit != "" {
					s += ", commit " + v.Commit
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), s+")")
				return err
			}
			return nil
		},
	}
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}
