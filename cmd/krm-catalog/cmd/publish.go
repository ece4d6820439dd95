package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/diff"
)

// versionLabel is the standard Kubernetes label publish takes a catalog's version from by default.
const versionLabel = "app.kubernetes.io/version"

// publishOptions are publish's flags.
type publishOptions struct {
	serverURL, token, version string
	format                    *outputFormat
	allowHTTP                 bool
	failOn                    string
}

func newPublishCmd() *cobra.Command {
	o := &publishOptions{}
	cmd := &cobra.Command{
		Use:   "publish --server URL [--token T] [--version V] FILE",
		Short: "Publish a catalog or a function definition to a krm-catalog service",
		Long: `Publish sends a KRMFunctionCatalog (as a new version of the catalog named by its
metadata.name) or a KRMFunctionDefinition to the service. The version comes from
--version, else from the catalog's app.kubernetes.io/version label. The token comes
from --token or KRM_CATALOG_TOKEN.

The file is checked locally first; the service checks it again and stores it
byte for byte.

A catalog is compared with the latest version the service has, and what the new
version changes is printed on standard error as catalog diff prints it, so that a
version that drops functions does not do so silently. --fail-on breaking (or any)
publishes nothing, and exits 1, when the comparison finds a breaking change (any
change).`,
		Example: `  krm-catalog publish --server http://127.0.0.1:8080 --version 1.0.0 examples/functions/catalog.yaml
  krm-catalog publish --fail-on breaking --version 1.1.0 examples/functions/catalog.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	serverFlag(cmd, &o.serverURL)
	cmd.Flags().StringVar(&o.token, "token", "", "API token (default $KRM_CATALOG_TOKEN)")
	cmd.Flags().StringVar(&o.version, "version", "", "catalog version (default: the app.kubernetes.io/version label)")
	allowHTTPFlag(cmd, &o.allowHTTP)
	failOnFlag(cmd, &o.failOn)
	o.format = addFormatFlag(cmd, "text", "json")
	return cmd
}

func (o *publishOptions) run(cmd *cobra.Command, path string) error {
	if err := o.format.check(); err != nil {
		return err
	}
	if err := checkFailOn(o.failOn); err != nil {
		return err
	}
	token, err := tokenOrEnv(o.token)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usageErr(fmt.Errorf("read %s: %w", path, err))
	}
	v, err := catalog.NewValidator()
	if err != nil {
		return err
	}
	doc, findings, err := v.ReadPublishable(path, data)
	if findings.HasErrors() {
		_ = writeFindings(cmd.ErrOrStderr(), findings)
		return failure(errors.New("not published: the file has errors"))
	}
	if err != nil {
		return usageErr(fmt.Errorf("publish takes one catalog or definition per file: %w", err))
	}
	client, err := tokenClient(serverOrEnv(o.serverURL), token, o.allowHTTP)
	if err != nil {
		return usageErr(err)
	}
	var res apiclient.Published
	var changes *diff.Report
	if cat := doc.Catalog; cat != nil {
		version := o.version
		if version == "" {
			version = cat.Labels[versionLabel]
		}
		if version == "" {
			return usageErr(fmt.Errorf("no version: pass --version or set the %s label", versionLabel))
		}
		if changes, err = o.gate(cmd, client, v, path, cat); err != nil {
			return err
		}
		res, err = client.PublishCatalog(cmd.Context(), cat.Name, version, data)
	} else {
		def := doc.Definition
		res, err = client.PublishDefinition(cmd.Context(), def.Function.Group, def.Function.Kind, data)
	}
	var apiErr *apiclient.Error
	if errors.As(err, &apiErr) {
		for _, d := range apiErr.Details {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s:%d:%d: %s: %s (at %s)\n", path, d.Line, d.Column, d.Severity, d.Message, d.Path)
		}
		return failure(fmt.Errorf("not published: %w", err))
	}
	if err != nil {
		return publishErr(path, err)
	}
	return o.print(cmd, path, res, changes)
}

// gate compares the catalog with the latest published version, prints what changes and refuses
// the publish when --fail-on says so.
func (o *publishOptions) gate(cmd *cobra.Command, client *apiclient.Client, v *catalog.Validator, path string, cat *catalog.Catalog) (*diff.Report, error) {
	changes, err := changesFromLatest(cmd.Context(), client, v, path, cat)
	if err != nil {
		return nil, publishErr(path, err)
	}
	if changes == nil {
		return nil, nil
	}
	if len(changes.Changes) > 0 {
		if err := writeDiffText(cmd.ErrOrStderr(), *changes); err != nil {
			return nil, err
		}
	}
	if failsOn(o.failOn, *changes) {
		return nil, failure(fmt.Errorf("not published: %d change(s), %d breaking, from %s (--fail-on %s)", len(changes.Changes), changes.Breaking, changes.Old, o.failOn))
	}
	return changes, nil
}

func (o *publishOptions) print(cmd *cobra.Command, path string, res apiclient.Published, changes *diff.Report) error {
	if o.format.is("json") {
		return writeJSON(cmd.OutOrStdout(), struct {
			apiclient.Published
			Changes *diff.Report `json:"changes,omitempty"`
		}{res, changes})
	}
	what := "unchanged (already published with the same bytes)"
	if res.Created {
		what = "published"
	}
	if res.Catalog != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "catalog %v version %v %s: %v\n", res.Catalog["catalog"], res.Catalog["version"], what, res.Catalog["digest"])
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "definition %v/%v %s: %v\n", res.Def["group"], res.Def["kind"], what, res.Def["digest"])
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s:%d:%d: warning: %s (at %s)\n", path, w.Line, w.Column, w.Message, w.Path)
	}
	return nil
}

// publishErr is the error of a request to the service that failed: nobody answered, or the
// service refused or failed it (an HTTP error status), or the answer could not be read. An
// operation that failed exits 1 (docs/cli.md); the request itself was checked before it was sent.
func publishErr(file string, err error) error {
	return failure(fmt.Errorf("publish %s: %w", file, err))
}

// changesFromLatest compares cat, read from file, with the latest version of its catalog the
// service has: nil when it has none.
func changesFromLatest(ctx context.Context, client *apiclient.Client, v *catalog.Validator, file string, cat *catalog.Catalog) (*diff.Report, error) {
	data, latest, err := client.LatestCatalog(ctx, cat.Name)
	if err != nil || data == nil {
		return nil, err
	}
	old := cat.Name + " " + latest + " (published)"
	doc, findings, err := v.ReadPublishable(old, data)
	if findings.HasErrors() || err != nil || doc.Catalog == nil {
		// a version the service took but this validator refuses (an older rule): nothing to compare
		return nil, nil
	}
	rep := diff.NewReport(old, file, doc.Catalog, cat)
	return &rep, nil
}

// allowHTTPFlag registers the flag that lets a command send its token over plain HTTP.
func allowHTTPFlag(cmd *cobra.Command, allow *bool) {
	cmd.Flags().BoolVar(allow, "allow-http-token", false, "send the token over plain http:// to another machine, where anyone on the path can read it (without it, only https:// or this machine)")
}

// tokenClient is the API client of a command that sends a token: over plain HTTP only to this
// machine, unless allowHTTP.
// tokenOrEnv is the token of a command that sends one: --token, else KRM_CATALOG_TOKEN; a usage
// error when neither is set.
func tokenOrEnv(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if t := os.Getenv("KRM_CATALOG_TOKEN"); t != "" {
		return t, nil
	}
	return "", usageErr(errors.New("no token: pass --token or set KRM_CATALOG_TOKEN (krm-catalog token create prints one)"))
}

func tokenClient(serverURL, token string, allowHTTP bool) (*apiclient.Client, error) {
	var opts []apiclient.Option
	if allowHTTP {
		opts = append(opts, apiclient.AllowCleartextToken())
	}
	c, err := apiclient.New(serverURL, token, nil, opts...)
	if errors.Is(err, apiclient.ErrCleartextToken) {
		return nil, fmt.Errorf("%w (--allow-http-token)", err)
	}
	return c, err
}
