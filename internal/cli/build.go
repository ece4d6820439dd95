package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/composition"
)

func newBuildCmd() *cobra.Command {
	var (
		o          fnOptions
		resultsDir string
	)
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Render a directory holding a composition.yaml (KEP-2299) to YAML",
		Long: `Build consolidates the Composition in DIR/composition.yaml into one list of transformers
(transformersFrom imports, prepended or appended; transformerOverrides applied to imported
transformers as strategic merge patches; its own transformers; transformerOrder) and runs it,
starting from no resources, printing the resources it produces.

Transformers with apiVersion builtin, and inline Kustomizations, run through the kustomize API
library; any other transformer is a KRM function, resolved from its runtime field or
config.kubernetes.io/function annotation, or else from the catalogs (--catalog, then the
Composition's catalogs field, each needing --trusted-catalog). A catalog path in a
composition file is relative to that file, and trusted as shown in the error that names it.`,
		Example: `  krm-catalog build app/ --catalog catalog.yaml --trusted-catalog catalog.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			comp, err := composition.Load(args[0])
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			o.catalogs = append(o.catalogs, comp.Catalogs...)
			stderr := cmd.ErrOrStderr()
			r, err := o.runner(stderr, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			items, runs, runErr := comp.Run(cmd.Context(), r)
			if err := reportResults(stderr, resultsDir, runs); err != nil {
				return err
			}
			if runErr != nil {
				return runExit(runErr)
			}
			if len(items) == 0 {
				return runExit(errors.New("the composition produced no resources"))
			}
			clean, err := fn.StripInternal(items)
			if err != nil {
				return err
			}
			data, err := (&fn.ResourceList{Items: clean}).EncodeOutput(fn.Input{Stream: true})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	return cmd
}
