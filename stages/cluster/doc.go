// Package cluster runs a run's steps on a cluster scheduler (docs/many-machines.md): the graph of
// steprun.Plan, one stage of one step per scheduler job, each job a `spade <stage> --step N` process
// (one per shard for the fan-out stages) against a lake every node reaches.
//
// SubmitSlurm submits the graph to Slurm as job arrays and single jobs chained with afterok, records
// each job in the lake beside the run, and on a second call submits only what is neither committed nor
// still pending or running (a failed shard alone, then what waits for it); before anything is
// submitted, CheckFit refuses a stage's request that no node of its partition could hold. Status reads
// the lake's commit state and Slurm's job states back, flagging pending reasons that will not clear. RenderK8s writes the same graph as Kubernetes Indexed Jobs.
package cluster
