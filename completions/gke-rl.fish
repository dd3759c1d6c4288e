# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_gke_rl_global_optspecs
    string join \n h/help V/version
end

function __fish_gke_rl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_gke_rl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_gke_rl_using_subcommand
    set -l cmd (__fish_gke_rl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c gke-rl -n "__fish_gke_rl_needs_command" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -s V -l version -d 'Print version'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "render" -d 'Render every artifact (env.sh, gcluster deployment file, RayCluster, Secret command, .rayignore, runtime env, job script) from the current config'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "validate" -d 'Check artifacts for every known defect, alone and across files'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "blueprint" -d 'Patch the upstream gke-a4 blueprint into a deployable Lustre + Ray + Spot blueprint'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "cost" -d 'Show what the deployment costs per hour and per day while it exists: GPU nodes, the Ray head\'s and system pools, and Lustre, at the embedded list prices (or the config\'s `cost` prices). Needs no network, but on an existing cluster (`project.existing_cluster`) it asks gcloud for the head\'s pool and the Lustre instance as they are'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "deploy" -d 'Create the GKE cluster, Managed Lustre and the RayCluster from the config, and wait until every Ray pod is Ready; re-running resumes after the last completed step'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "destroy" -d 'Delete the RayCluster, empty the blueprint\'s buckets, run `gcluster destroy`, and verify with gcloud that the cluster and the Lustre instance are gone; on a cluster gke-rl did not create, delete only what its deploy made'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "suspend" -d 'Suspend the RayCluster: KubeRay deletes its pods and keeps its spec, so the GPU nodes idle (and an autoscaling node pool removes them) until `resume`'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "resume" -d 'Resume a suspended RayCluster and wait until every pod is Ready'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "submit" -d 'Submit the training job to the Ray cluster and follow it to the end'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "status" -d 'Show a job\'s status (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "logs" -d 'Print a job\'s log (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "report" -d 'Report a run\'s progress, goodput and cost from its log (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "stop" -d 'Stop a running job and wait until it has stopped'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "jobs" -d 'List the cluster\'s jobs'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "fabric-check" -d 'Measure the GPU fabric: an all-reduce across every GPU of every GPU node, the network transport each node\'s NCCL chose, and the bus bandwidth against the line rate'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "storage-check" -d 'Measure the shared file system as a checkpoint uses it: every GPU node writes its ranks\' files in parallel, reads back another node\'s, and creates, stats and deletes small files; judged against the Lustre instance\'s tier and the run\'s checkpoints'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "models" -d 'Print what gke-rl knows: its models, GPU families and NeMo-RL releases (Markdown)'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "schema" -d 'Print the JSON schema of the config file (gke-rl.yaml), every key with its type and default'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh or fish) to stdout'
complete -c gke-rl -n "__fish_gke_rl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand render" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand render" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand render" -l out -d 'Output directory' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand render" -l force -d 'Overwrite files in DIR that gke-rl did not generate; render also writes what fails validation'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand render" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l crd -d 'Check RayClusters (or RayJobs) against this CRD\'s openAPIV3Schema instead of KubeRay v1.7.0\'s, which is built in (a CRD in YAML or JSON, or a RayCluster\'s schema as JSON); once per kind' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l format -d 'Output format' -r -f -a "human\t'rustc-style, with the source line and a caret'
json\t'An object: {findings: [{file, code, severity, line, column, message, help, fix?}], skipped: [{code, missing, enable}], rules_checked, rules}'
sarif\t'SARIF 2.1.0, for code-scanning UIs'"
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -s v -l verbose -d 'List the rules that were not checked, and what would let each run'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l fix -d 'Make the edits the findings suggest in the files named. As `cargo fix`, only in files git can undo (tracked, no uncommitted changes); for others the edits are shown, not made'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -l allow-dirty -d 'With --fix, edit files that have uncommitted changes or are not in git too'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l toolkit -d 'Cluster Toolkit checkout (reads examples/gke-a4/gke-a4.yaml)' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l blueprint -d 'The blueprint file to patch' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l out -d 'Output directory' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -l force -d 'Overwrite files in DIR that gke-rl did not generate; render also writes what fails validation'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand blueprint" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand cost" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand cost" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand cost" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l project -d 'Google Cloud project [default: the config\'s project_id, else $PROJECT_ID, else gcloud\'s configured project]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l folder -d 'Deployment folder (state file, patched blueprint, gcluster\'s files) [default: .gke-rl/<cluster_name>]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l toolkit -d 'Cluster Toolkit checkout [default: ./cluster-toolkit]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l authorized-cidr -d 'CIDR allowed to reach the control plane [default: the config\'s, else this machine\'s public address]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l timeout -d 'How long to wait for the Ray pods to be Ready (90s, 30m, 1h)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l address-echo -d 'Where to ask for this machine\'s public address (plain text, one address)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l idle-timeout -d 'Install an in-cluster guard that suspends the RayCluster after this long without a running job (30m, 2h); the GPU pool then autoscales from zero [default: the config\'s job.idle_timeout_minutes]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l download-dependencies -d 'Let gcluster download Terraform and Packer instead of requiring them on PATH'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l dry-run -d 'Print every command and Kubernetes object, change nothing'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l yes -d 'Do not ask before creating billable resources'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l fabric-check -d 'Once the RayCluster is Ready, run `fabric-check` on it (exit 1 when it fails)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -l storage-check -d 'Once the RayCluster is Ready, run `storage-check` on it (exit 1 when it fails), before any training bills the GPUs'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand deploy" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l project -d 'Google Cloud project [default: the config\'s project_id, else $PROJECT_ID, else gcloud\'s configured project]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l folder -d 'Deployment folder (state file, patched blueprint, gcluster\'s files) [default: .gke-rl/<cluster_name>]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l toolkit -d 'Cluster Toolkit checkout [default: ./cluster-toolkit]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l dry-run -d 'Print what would be deleted and every command, change nothing'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l yes -d 'Do not ask before deleting'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -l disable-addons -d 'On a cluster gke-rl did not create, also turn off the add-ons its deploy turned on (RayOperator, LustreCsiDriver)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand destroy" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand suspend" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand suspend" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand suspend" -l timeout -d 'Give up waiting for the pods to go after this long (90s, 10m)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand suspend" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand resume" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand resume" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand resume" -l timeout -d 'Give up waiting for the pods after this long (90s, 30m, 1h)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand resume" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l working-dir -d 'Upload this folder (its .gitignore/.rayignore apply), or this .zip as it is, instead of the job folder' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l include -d 'Add a file to the job folder (repeatable)' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l runtime-env -d 'Runtime env file (JSON or YAML) [default: the rendered ray_runtime_env.json]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l submission-id -d 'Submission id [default: raysubmit_ and 16 random characters, as Ray makes them]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l max-restarts -d 'Restart the training after a lost node (a preemption) up to N times, in the cluster; NeMo-RL resumes from its newest checkpoint [default: the config\'s job.max_restarts, else 3 on Spot, 0 on a reservation]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l max-lost -d 'Stop restarting once restarts have lost this much wall time in all (2h, 1d) [default: no bound]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l restart-wait -d 'How long to wait before each restart for the cluster to be whole again, and for a suspended (or Kueue-held) cluster to come up (90s, 30m, 1h)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l runs-dir -d 'Where the run keeps its records, on the cluster\'s shared file system [default: LUSTRE_MOUNT/gke-rl/runs]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l checkpoint-dir -d 'NeMo-RL\'s checkpoint dir, whose half-written checkpoints a restart removes [default: the config\'s checkpointing.dir]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l then -d 'What to do with the RayCluster once the job and its restarts have ended: keep it, or suspend it (its pods deleted, its GPU nodes given back) [default: the config\'s job.when_done]' -r -f -a "keep\t''
suspend\t''"
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l env-from-local -d 'Pass this variable from your environment to the job (its value becomes readable through the Jobs API; prefer the Kubernetes Secret)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l metadata -d 'Job metadata KEY=VALUE (repeatable)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l entrypoint-num-cpus -d 'CPUs reserved for the entrypoint' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l entrypoint-num-gpus -d 'GPUs reserved for the entrypoint' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l entrypoint-memory -d 'Memory reserved for the entrypoint, in bytes' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l entrypoint-resources -d 'Custom resources for the entrypoint, as a JSON object' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l entrypoint-label-selector -d 'Node labels the entrypoint must run on, KEY=VALUE (repeatable; Ray 2.54+)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l follow-links-out -d 'Upload what symlinks out of the working dir point at, as Ray does [default: refuse them]'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l with-credential-files -d 'Upload credential files in the working dir (.ssh/, .aws/, .npmrc, *.pem, ...), as Ray does [default: leave them out]'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l no-wait -d 'Return once the job is accepted'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -s q -l quiet -d 'Hide the job\'s log while following it, keep the run\'s one-line progress'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -l no-supervisor -d 'Run the command as given, without gke-rl\'s supervisor: no restart after a lost node, no run records (for a head whose jobs\' `python` has no Ray, say)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand submit" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -l json -d 'Print JSON (secret values redacted)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand status" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -s f -l follow -d 'Keep streaming until the job ends'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -s q -l quiet -d 'With --follow: hide the log, keep the run\'s one-line progress'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand logs" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l log -d 'Read a saved log instead of the cluster\'s (its wall time comes from the supervisor\'s records, if it has them)' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l format -d 'Output format: text, or json (every step\'s figures)' -r -f -a "text\t''
json\t''"
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l out -d 'Also write DIR/report.html: the plots in one file that loads nothing from anywhere (for a job on the cluster, with its Lustre instance\'s figures whenever gcloud can read them)' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l monitoring-endpoint -d 'Cloud Monitoring\'s endpoint; tests point it at a fake on loopback, the only other place it may be' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -l lustre -d 'Add the config\'s Lustre instance\'s read and write throughput and space used during the run, from Cloud Monitoring with gcloud\'s login; an error (after the rest) when they cannot be read'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand report" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -l no-wait -d 'Return once the stop is requested'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand stop" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -l json -d 'Print JSON (secret values redacted)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand jobs" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l sizes -d 'Message sizes of the all-reduce sweep, with K, M or G (powers of 1024)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l min-fraction -d 'Fail when the largest message\'s bus bandwidth is below this fraction of the line rate' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l check-timeout -d 'The longest the check job may run (90s, 30m, 1h)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l verbose -d 'Print the job\'s log (NCCL\'s lines included) as it runs'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -l json -d 'Print the report as JSON'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand fabric-check" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l config -d 'Config file [default: ./gke-rl.yaml if present, else the embedded default]' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l env-file -d 'Import an existing codelab env.sh instead of a config file' -r -F
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l address -d 'Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job` reads them; else a port-forward to the config\'s RayCluster]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l headers -d 'Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with --address), or from the RayCluster\'s Secret (through the port-forward)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l request-timeout -d 'Give up on a request the dashboard does not answer within this many seconds' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l as -d 'Run as this job.mode instead of the config\'s: `--as rayjob` submits one run as a RayJob with a cluster of its own (the deployment\'s RayCluster suspended), and finds it again' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l size -d 'The most each node writes, with K, M, G or T; by default each writes its share of one checkpoint of the configured model, up to this' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l min-fraction -d 'Fail when the nodes\' aggregate write or read is below this fraction of the instance\'s list throughput (capacity × tier)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l dir -d 'The folder to measure, on every node [default: the config\'s lustre.mount_path]' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l check-timeout -d 'The longest the check job may run (90s, 30m, 1h)' -r
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l verbose -d 'Print the job\'s log as it runs'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -l json -d 'Print every figure as JSON'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand storage-check" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand models" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand schema" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "render" -d 'Render every artifact (env.sh, gcluster deployment file, RayCluster, Secret command, .rayignore, runtime env, job script) from the current config'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "validate" -d 'Check artifacts for every known defect, alone and across files'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "blueprint" -d 'Patch the upstream gke-a4 blueprint into a deployable Lustre + Ray + Spot blueprint'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "cost" -d 'Show what the deployment costs per hour and per day while it exists: GPU nodes, the Ray head\'s and system pools, and Lustre, at the embedded list prices (or the config\'s `cost` prices). Needs no network, but on an existing cluster (`project.existing_cluster`) it asks gcloud for the head\'s pool and the Lustre instance as they are'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "deploy" -d 'Create the GKE cluster, Managed Lustre and the RayCluster from the config, and wait until every Ray pod is Ready; re-running resumes after the last completed step'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "destroy" -d 'Delete the RayCluster, empty the blueprint\'s buckets, run `gcluster destroy`, and verify with gcloud that the cluster and the Lustre instance are gone; on a cluster gke-rl did not create, delete only what its deploy made'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "suspend" -d 'Suspend the RayCluster: KubeRay deletes its pods and keeps its spec, so the GPU nodes idle (and an autoscaling node pool removes them) until `resume`'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "resume" -d 'Resume a suspended RayCluster and wait until every pod is Ready'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "submit" -d 'Submit the training job to the Ray cluster and follow it to the end'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "status" -d 'Show a job\'s status (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "logs" -d 'Print a job\'s log (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "report" -d 'Report a run\'s progress, goodput and cost from its log (default: the latest submitted job)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "stop" -d 'Stop a running job and wait until it has stopped'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "jobs" -d 'List the cluster\'s jobs'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "fabric-check" -d 'Measure the GPU fabric: an all-reduce across every GPU of every GPU node, the network transport each node\'s NCCL chose, and the bus bandwidth against the line rate'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "storage-check" -d 'Measure the shared file system as a checkpoint uses it: every GPU node writes its ranks\' files in parallel, reads back another node\'s, and creates, stats and deletes small files; judged against the Lustre instance\'s tier and the run\'s checkpoints'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "models" -d 'Print what gke-rl knows: its models, GPU families and NeMo-RL releases (Markdown)'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "schema" -d 'Print the JSON schema of the config file (gke-rl.yaml), every key with its type and default'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "completions" -d 'Print a shell completion script (bash, zsh or fish) to stdout'
complete -c gke-rl -n "__fish_gke_rl_using_subcommand help; and not __fish_seen_subcommand_from render validate blueprint cost deploy destroy suspend resume submit status logs report stop jobs fabric-check storage-check models schema completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
