package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/invoke"
)

// fnProxyRemote is fn proxy over a function evaluator: the ResourceList on standard input goes to
// the evaluator as the function image names, and what it answers comes back as a local function's
// would: the list on standard output, the function's log on standard error, exit 1 on failure.
func fnProxyRemote(ctx context.Context, cmd *cobra.Command, addr, image string, timeout time.Duration) error {
	data, err := invoke.ReadInput(cmd.InOrStdin())
	if err != nil {
		return invokeExit(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(len(data)+defaultMaxMessage)))
	if err != nil {
		return usageErr(fmt.Errorf("--evaluator: %w", err))
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := evaluatorpb.NewFunctionEvaluatorClient(conn).EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: data})
	if err != nil {
		st := status.Convert(err)
		// a failed function's list (with its results) and log come in the details
		for _, d := range st.Details() {
			if r, ok := d.(*evaluatorpb.EvaluateFunctionResponse); ok {
				resp = r
			}
		}
		err = fmt.Errorf("evaluator %s: %s: %s", addr, st.Code(), st.Message())
	}
	if resp != nil {
		if _, werr := cmd.ErrOrStderr().Write(resp.GetLog()); werr != nil && err == nil {
			err = werr
		}
		if _, werr := cmd.OutOrStdout().Write(resp.GetResourceList()); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}
