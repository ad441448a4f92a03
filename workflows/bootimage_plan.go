package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
)

// PlanBootImage is the bump's dry run: the MachineSets it would patch,
// read from the cluster.
func PlanBootImage(ctx workflow.Context, in BootImageBumpInput) UpdatePlan {
	in.defaults()
	p := UpdatePlan{Inner: in.Concurrency}
	// As the bump does today: the opt-in is the cluster's own.
	err := workflow.ExecuteActivity(PlanOptions(ctx, "plan MachineSets of "+in.Cluster), planBoot.PlanBootImageBump, activities.BootImagePlanInput{
		Cluster: in.Cluster, Release: in.Release, Selection: in.Selection, Selector: in.Selector, FromCluster: true,
	}).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = Unreadable(PlanRow{Device: "(cluster)"}, err)
	}
	return p
}

// planBoot names the read-only activity a bump's dry run calls.
var planBoot *activities.BootImageActivities
