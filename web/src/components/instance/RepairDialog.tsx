// Opens the dialog of one repair, pre-filled from its params.
import { ForceJumpDialog } from "./ForceJumpDialog";
import { JobRetryDialog } from "./JobRetryDialog";
import { RecoveryDialog } from "./RecoveryDialog";
import { ReplayDialog } from "./ReplayDialog";
import { ReassignDialog, RemindDialog } from "./TaskDialogs";
import type { RepairRequest } from "./repairs";
import type { Diagnostics } from "../../api/diagnosticsDocument";

export function RepairDialog({ doc, repair, onClose, onDone }: { doc: Diagnostics; repair: RepairRequest; onClose: () => void; onDone: () => void }) {
  const p = repair.params;
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const task = doc.tasks.find((tk) => tk.id === Number(p.taskId));
  switch (repair.action) {
    case "force_jump":
      return <ForceJumpDialog doc={doc} target={str(p.target)} fromNode={str(p.fromNode)} onClose={onClose} onDone={onDone} />;
    case "job_retry": {
      const jobId = Number(p.jobId);
      const job = [...doc.trace.jobChain.jobs, ...doc.triggers].find((j) => j.id === jobId);
      return <JobRetryDialog jobId={jobId} job={job} onClose={onClose} onDone={onDone} />;
    }
    case "recovery":
      return <RecoveryDialog instanceId={doc.instance.id} action={String(p.action)} onClose={onClose} onDone={onDone} />;
    case "remind":
      return <RemindDialog taskId={Number(p.taskId)} assignee={task?.assignee} onClose={onClose} onDone={onDone} />;
    case "reassign":
      return <ReassignDialog taskId={Number(p.taskId)} assignee={task?.assignee} onClose={onClose} onDone={onDone} />;
    case "replay":
      return <ReplayDialog instanceId={doc.instance.id} filter={p} onClose={onClose} onDone={onDone} />;
  }
}
