package cmd

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// completionTimeout bounds what a TAB press may wait for catalogs or the service.
const completionTimeout = 5 * time.Second

// completionPages bounds how many pages of the service's search completion reads.
const completionPages = 5

// fnCandidate is one function version completion can offer.
type fnCandidate struct {
	apiVersion, kind, description string
}

// completeFunctionArgs completes APIVERSION KIND: from the catalogs given (--catalog, those that are
// trusted, or built in: completion fetches what resolve would fetch, no more), else from the service
// in KRM_CATALOG_SERVER.
func completeFunctionArgs(o *fnOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= 2 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		var cands []fnCandidate
		if len(o.catalogs) > 0 || resolver.Builtin(os.LookupEnv) != "" {
			cands = catalogCandidates(ctx, o)
		} else {
			cands = serviceCandidates(ctx)
		}
		return functionCompletions(cands, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// functionCompletions offers apiVersions (with the kinds they serve) for the first argument, and
// the kinds of that apiVersion (with their descriptions) for the second.
func functionCompletions(cands []fnCandidate, args []string, toComplete string) []cobra.Completion {
	var out []cobra.Completion
	if len(args) == 0 {
		kinds := map[string][]string{}
		var order []string
		for _, c := range cands {
			if !strings.HasPrefix(c.apiVersion, toComplete) {
				continue
			}
			if _, ok := kinds[c.apiVersion]; !ok {
				order = append(order, c.apiVersion)
			}
			if !slices.Contains(kinds[c.apiVersion], c.kind) {
				kinds[c.apiVersion] = append(kinds[c.apiVersion], c.kind)
			}
		}
		slices.Sort(order)
		for _, av := range order {
			out = append(out, cobra.CompletionWithDesc(av, strings.Join(kinds[av], ", ")))
		}
		return out
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if c.apiVersion == args[0] && strings.HasPrefix(c.kind, toComplete) && !seen[c.kind] {
			seen[c.kind] = true
			out = append(out, cobra.CompletionWithDesc(c.kind, firstLine(c.description)))
		}
	}
	slices.Sort(out)
	return out
}

func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:79] + "…"
	}
	return s
}

// catalogCandidates reads the catalogs resolve would search; those that cannot be read or are not
// trusted are skipped: completion reports nothing, resolve itself says what is wrong.
func catalogCandidates(ctx context.Context, o *fnOptions) []fnCandidate {
	r, err := o.resolver(&ociAdapter{opts: o})
	if err != nil {
		return nil
	}
	var out []fnCandidate
	for _, ref := range r.Refs() {
		cat, err := r.Load(ctx, ref.Raw)
		if err != nil {
			continue
		}
		for _, f := range cat.Functions {
			for _, v := range f.Versions {
				out = append(out, fnCandidate{apiVersion: f.APIVersion(v), kind: f.Kind, description: f.Description})
			}
		}
	}
	return out
}

// serviceCandidates reads the functions the service in KRM_CATALOG_SERVER knows, a few pages at most.
func serviceCandidates(ctx context.Context) []fnCandidate {
	// only a service the user named: completion must not wait on one that may not be running
	if os.Getenv(envServer) == "" {
		return nil
	}
	client, err := searchClient("")
	if err != nil {
		return nil
	}
	var out []fnCandidate
	q := apiclient.SearchQuery{Limit: 100}
	for range completionPages {
		res, err := client.Search(ctx, q)
		if err != nil {
			break
		}
		for _, f := range res.Functions {
			for _, v := range f.Versions {
				out = append(out, fnCandidate{apiVersion: f.Group + "/" + v, kind: f.Kind, description: f.Description})
			}
		}
		if res.NextPageToken == "" {
			break
		}
		q.PageToken = res.NextPageToken
	}
	return out
}
