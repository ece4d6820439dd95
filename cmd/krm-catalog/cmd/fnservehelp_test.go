package cmd

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// The grpcurl example of fn serve --help works without reflection: the proto file it names is
// where it says, the method is the server's, and the request JSON is one grpcurl sends as the
// message (protojson: bytes in base64).
func TestFnServeHelpGrpcurlExample(t *testing.T) {
	t.Parallel()
	example := newFnServeCmd().Example
	call := regexp.MustCompile(`grpcurl -plaintext -import-path (\S+) -proto (\S+) \\\n\s+-d "((?:[^"\\]|\\.)*)" \\\n\s+(\S+) (\S+)\n`).FindStringSubmatch(example)
	if call == nil {
		t.Fatalf("no grpcurl call with -import-path and -proto in:\n%s", example)
	}
	importPath, proto, data, method := call[1], call[2], call[3], call[5]
	if _, err := os.Stat(filepath.Join("..", "..", "..", importPath, proto)); err != nil {
		t.Errorf("the proto file of the example: %v", err)
	}
	if "/"+method != evaluatorpb.FunctionEvaluator_EvaluateFunction_FullMethodName {
		t.Errorf("method %s, the server's is %s", method, evaluatorpb.FunctionEvaluator_EvaluateFunction_FullMethodName)
	}
	list := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
	data = strings.ReplaceAll(data, `\"`, `"`)
	data = regexp.MustCompile(`\$\(base64 -w0 [^)]*\)`).ReplaceAllString(data, base64.StdEncoding.EncodeToString([]byte(list)))
	var req evaluatorpb.EvaluateFunctionRequest
	if err := protojson.Unmarshal([]byte(data), &req); err != nil {
		t.Fatalf("the example's request %s: %v", data, err)
	}
	if string(req.GetResourceList()) != list || req.GetImage() == "" {
		t.Errorf("request %v", &req)
	}
}
