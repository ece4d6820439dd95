package evaluator

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// forward hands a call to the fallback evaluator: the request as it came, the caller's metadata (a
// trace context among it), the call's deadline. The fallback client bounds the messages both ways
// as this server does. The memory the call holds meanwhile, its request and the answer, is
// reserved like any call's, without a function's slot: the fallback bounds its own functions.
func (s *Server) forward(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	size := len(req.GetResourceList())
	release, err := s.admit.admit(ctx, "", size, min(2*int64(size)+callCostBase, s.o.MemoryBudget))
	if err != nil {
		return nil, err
	}
	defer release()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, forwardedMetadata(md))
	}
	resp, err := s.o.Fallback.EvaluateFunction(ctx, req)
	if err != nil {
		// the fallback's status, details included, is the answer
		return nil, status.Convert(err).Err()
	}
	return resp, nil
}

// forwardedMetadata is the caller's metadata less what belongs to the connection it came on.
func forwardedMetadata(in metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range in {
		switch {
		case strings.HasPrefix(k, ":"), strings.HasPrefix(k, "grpc-"),
			k == "content-type", k == "user-agent", k == "te", k == "authority", k == "host":
			continue
		}
		out[k] = v
	}
	return out
}
