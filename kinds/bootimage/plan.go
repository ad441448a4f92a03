package bootimage

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// PlanBootImage is the bump's dry run: the MachineSets it would patch,
// read from the cluster.
func PlanBootImage(ctx workflow.Context, in BootImageBumpInput) workflows.UpdatePlan {
	in.defaults()
	p := workflows.UpdatePlan{Inner: in.Concurrency}
	// As the bump does today: the opt-in is the cluster's own.
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "plan MachineSets of "+in.Cluster), planBoot.PlanBootImageBump, BootImagePlanInput{
		Cluster: in.Cluster, Release: in.Release, Selection: in.Selection, Selector: in.Selector, FromCluster: true,
	}).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = workflows.Unreadable(workflows.PlanRow{Device: "(cluster)"}, err)
	}
	return p
}

// planBoot names the read-only activity a bump's dry run calls.
var planBoot *BootImageActivities
