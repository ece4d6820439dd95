// Command require-team is a validator on kptdev/krm-functions-sdk, written as the catalog's
// validators are: every Deployment must carry the label the functionConfig's data names (team, by
// default); each one that does not is an error result naming it, and the function fails.
package main

import (
	"fmt"
	"os"

	"github.com/kptdev/krm-functions-sdk/go/fn"
)

func process(rl *fn.ResourceList) (bool, error) {
	label := "team"
	if rl.FunctionConfig != nil {
		if v, ok, err := rl.FunctionConfig.NestedString("data", "label"); err != nil {
			return false, err
		} else if ok && v != "" {
			label = v
		}
	}
	ok := true
	for _, o := range rl.Items {
		if o.GetKind() != "Deployment" {
			continue
		}
		if _, found := o.GetLabels()[label]; !found {
			ok = false
			rl.Results = append(rl.Results, fn.ConfigObjectResult(fmt.Sprintf("Deployment %s has no %s label", o.GetName(), label), o, fn.Error))
		}
	}
	return ok, nil
}

func main() {
	if err := fn.AsMain(fn.ResourceListProcessorFunc(process)); err != nil {
		os.Exit(1)
	}
}
