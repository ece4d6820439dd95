package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
)

// envServer names the service every client command talks to when --server is not given.
const envServer = "KRM_CATALOG_SERVER"

// defaultServer is where serve listens unless told otherwise.
const defaultServer = "http://127.0.0.1:8080"

func newSearchCmd() *cobra.Command {
	var (
		serverURL string
		format    *outputFormat
		q         apiclient.SearchQuery
	)
	cmd := &cobra.Command{
		Use:   "search [QUERY] [--runtime R] [--tag T]... [--publisher P]",
		Short: "Search the functions a krm-catalog service knows",
		Long: `Search asks a krm-catalog service (--server, or KRM_CATALOG_SERVER) for the functions of
its published catalogs and definitions: QUERY matches kinds, groups, descriptions, tags and
publishers, each word as a prefix; --runtime, --tag (repeatable: all must be present) and
--publisher narrow the results. It prints a table, or with --format json the service's answer
(functions, total, facet counts and the next page token).`,
		Example: `  krm-catalog search namespace
  KRM_CATALOG_SERVER=http://127.0.0.1:8080 krm-catalog search --runtime exec --tag validator
  krm-catalog search --server http://127.0.0.1:8080 --format json --publisher example.com`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			if len(args) == 1 {
				q.Text = args[0]
			}
			client, err := searchClient(serverURL)
			if err != nil {
				return err
			}
			res, err := client.Search(cmd.Context(), q)
			var apiErr *apiclient.Error
			if errors.As(err, &apiErr) && apiErr.Status == 400 {
				return usageErr(fmt.Errorf("search: %w", err))
			}
			if err != nil {
				return failure(fmt.Errorf("search: %w", err))
			}
			if format.is("json") {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return writeSearchTable(cmd.OutOrStdout(), res, isTerminal(cmd.OutOrStdout()))
		},
	}
	fs := cmd.Flags()
	serverFlag(cmd, &serverURL)
	fs.StringVar(&q.Runtime, "runtime", "", "only functions with this runtime: container, exec or starlark")
	fs.StringArrayVar(&q.Tags, "tag", nil, "only functions with this tag (repeatable: all of them)")
	fs.StringVar(&q.Publisher, "publisher", "", "only functions of this publisher")
	fs.IntVar(&q.Limit, "limit", 0, "at most this many results, 1 to 100 (default: the service's page size)")
	fs.StringVar(&q.PageToken, "page-token", "", "the next page of an earlier search (nextPageToken of --format json)")
	format = addFormatFlag(cmd, "text", "json")
	_ = cmd.RegisterFlagCompletionFunc("runtime", cobra.FixedCompletions([]string{"container", "exec", "starlark"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// searchClient is the API client for --server, else $KRM_CATALOG_SERVER.
func searchClient(serverURL string) (*apiclient.Client, error) {
	c, err := apiclient.New(serverOrEnv(serverURL), "", nil)
	if err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

// serverFlag registers --server, the one way every command that talks to the service is told
// which: the flag, else KRM_CATALOG_SERVER, else the address serve listens on by default.
func serverFlag(cmd *cobra.Command, serverURL *string) {
	cmd.Flags().StringVar(serverURL, "server", "", "the krm-catalog service (default $"+envServer+", else "+defaultServer+")")
}

// serverOrEnv is the service a command talks to: --server, else KRM_CATALOG_SERVER, else the
// address serve listens on by default.
func serverOrEnv(flag string) string {
	if flag != "" {
		return flag
	}
	if s := os.Getenv(envServer); s != "" {
		return s
	}
	return defaultServer
}

// descriptionWidth bounds the description column on a terminal, where lines wrap.
const descriptionWidth = 60

func writeSearchTable(w io.Writer, res apiclient.SearchResult, terminal bool) error {
	if len(res.Functions) == 0 {
		_, err := fmt.Fprintln(w, "no functions found")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FUNCTION\tVERSIONS\tRUNTIMES\tPUBLISHER\tTAGS\tDESCRIPTION")
	for _, f := range res.Functions {
		desc := strings.Join(strings.Fields(f.Description), " ")
		if terminal && len([]rune(desc)) > descriptionWidth {
			desc = string([]rune(desc)[:descriptionWidth-1]) + "…"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", f.Group, f.Kind, strings.Join(f.Versions, ","),
			strings.Join(f.Runtimes, ","), f.Publisher, strings.Join(f.Tags, ","), desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	total := fmt.Sprint(res.Total)
	if res.TotalCapped {
		total += "+"
	}
	more := ""
	if res.NextPageToken != "" {
		more = fmt.Sprintf("; next page: --page-token %s", res.NextPageToken)
	}
	_, err := fmt.Fprintf(w, "%d of %s function(s)%s\n", len(res.Functions), total, more)
	return err
}
