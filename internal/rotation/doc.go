/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package rotation is the MRTRKeyring phase machine, as one pure function: Step takes everything the
// reconciler observed (the keyring's spec and last status, the Secret, the target workloads and
// their pods, a freshly generated candidate key and an explicit now) and returns what to do (the
// keyring to write, the fingerprint to stamp on the workloads, the pods to restart, the new status,
// when to look again, which events to emit). It makes no API calls and reads no clock, so every
// decision is table-tested.
//
// # How Step is built: observe, decide, describe
//
// Step is three stages, each a function of values, none reading what a later one sets:
//
//   - observe (observe.go, ackproof.go) derives every fact of the Input once: the status as last
//     written, completed from what the Secret records; the phase to resume when the Secret holds
//     a write whose status update was lost; the staged key; each pod's acknowledgement as the
//     acceptance rule takes it (who wrote it, through which subresource, when); and the delivery
//     of the target keyring, with the targets missing or pending, the laggards of each and when
//     the Secret was written.
//   - decide (decide.go, revoke.go, evict.go, stampfight.go, progress.go) makes the phase
//     machine's move from the facts alone: one small function per phase exit (leaveStable,
//     leaveAccepting, ...), each building the next keyring with the keyset-manager verbs of
//     pkg/keyring (Add, SetPrimary, Delete), each exit check (rotationDue, readyToSeal,
//     delivered, replacedPodsGone, tokensExpired) returning a verdict (verdict.go: pass, what it
//     waits for, until when, why). Its outcome is the status as the machine leaves it,
//     the Secret write, the stamps (which targets, which held back by a stamp fight), the
//     evictions, the pods to nudge, the events, what each workload waits for (once, so that the
//     conditions, the stall and status.workloads quote the same text), the stall, the verdict the
//     phase waits on and the deadlines of every timed check: decide alone says what is stalled
//     and when to look again.
//   - describe (describe.go) renders the outcome: status.workloads, the conditions,
//     status.waitingFor (the verdicts: what, for whom, until when, which kubectl mrtr shows as it
//     is) and the requeue, the earliest of decide's deadlines; it computes no deadline of its own.
//     Each part it renders (workloadStatuses, selectedStatus, counts, conditions, waitingFor,
//     nextDeadline) is a function of the facts and the outcome alone, so no part depends on the
//     order the others run in; describe composes them into the status (statusOf) and the
//     Decision (describe_test.go derives them in reverse order and checks they agree).
//
// # The invariant
//
// A token sealed by any replica, at any moment, opens on every replica until it expires. It holds
// when (1) no replica seals with a key before every replica accepts it, and (2) no replica drops a key
// until no replica has sealed with it for tokenTTL + clockSkew + terminationGracePeriod.
//
// # The phases of one rotation from key A to key B
//
// A phase that follows a write ends only once the written keyring has reached every pod that can
// serve. How it gets there is spec.delivery:
//
//   - Reload (the default): the pods reload the mounted Secret themselves, and each acknowledges on
//     its own Pod the fingerprint of the keyring it loaded (annotation ack.AnnotationKey(secret),
//     written by the library's ack package). A pod runs the phase's keyring when it acknowledged
//     it, or when it acknowledged nothing and was created after the write (the managedFields time
//     of the operator's last write, against the pod's creationTimestamp, both by the API server's
//     clock): it started with what the write held. The pods are those each target's selector
//     selects, terminating ones included until they are gone, pods started mid-phase included,
//     and a view with fewer pods than the workload's controller counts is partial and proves
//     nothing. Nothing is stamped, nothing restarts, except a pod that has not run the keyring
//     reloadDeadline after the phase began (or it was created): it is evicted, at the pace its
//     workload can lose pods (its PodDisruptionBudget's disruptionsAllowed, else its rollout
//     strategy's maxUnavailable less the pods out of service, never every pod of several at once),
//     unless its node is not Ready, and its replacement counts like any pod. Most pods overdue at
//     once set AcknowledgementPathSuspect (evict.go). Pods selected by spec.podSelector (bare pods,
//     other controllers' pods) pass by their acknowledgement alone and are never evicted.
//
//   - Restart: every write is followed by stamping the fingerprint of the written keyring on the
//     pod template of every target (annotation mrtr.dev/keyring-hash), which restarts the pods; a
//     phase ends only when every target has rolled out that template (kubectl rollout status), so
//     every pod then runs with what was written.
//
// Whichever the delivery, the phases of a rotation with a staged next key (spec.nextKey Staged,
// the default) are these: the steady state already holds the next key N, accepted by every pod.
//
//	Secret:  [A,N]            [N,A]             [N,A]            [N,M]          [N,M]
//	phase:  Stable ---> SealingWithNew ---> WaitingTTL ---> Removing ---> Stable
//	          |                 |                 |               |
//	          due or            no pod seals     TTL wait        every pod
//	          requested, and    with A any more  elapsed         runs [N,M]
//	          every pod runs [A,N]
//	                           |<-- tokenTTL + clockSkew + grace -->|
//	pods seal with:  A . . . . | N . . . . . . . . . . . . . . . . . . N
//	pods accept:     A,N . . . . . . . . . . . . . . . . . . . A,N | N,M
//
// Two rounds of delivery per rotation: [N,A] and [N,M]. Stable may make N primary once every pod
// runs [A,N] (rule 1), proven again when the rotation starts, for targets added since; in Restart
// delivery also terminationGracePeriod after that rollout was seen complete (status.rolledOutAt),
// for the pods it replaced, which knew only the keyring before it.
//
// With spec.nextKey AtRotation, or a keyring that has no staged key (made before Staged existed,
// or adopted), the new key B is made when the rotation starts and accepted in a round of its own:
//
//	Secret:   [A]        [A,B]            [B,A]             [B,A]            [B]          [B]
//	phase:  Stable --> Accepting ---> SealingWithNew ---> WaitingTTL ---> Removing ---> Stable
//	          |            |                 |                 |               |
//	          due or       every pod         no pod seals     TTL wait        every pod
//	          requested    accepts B         with A any more  elapsed         runs [B]
//	                                         |<-- tokenTTL + clockSkew + grace -->|
//	pods seal with:  A . . . . . . . . . . A | B . . . . . . . . . . . . . . . . . . . B
//	pods accept:     A . . . . A,B . . . . . . . . . . . . . . . . . . A,B | B . . . .
//
// and Removing writes [B, M] instead of [B] when nextKey is Staged: a keyring without a staged
// key rotates in three rounds once, then in two. Accepting ends when every target runs [A,B]: from
// then on every pod opens B, so SealingWithNew may make B primary (rule 1). In Restart delivery it also waits terminationGracePeriod more, for the
// replaced pods (which knew only A) to stop; Reload delivery counts terminating pods until they are
// gone. SealingWithNew ends when every target runs [B,A]: no pod seals with A any more, except a
// replaced one for terminationGracePeriod; its tokens live tokenTTL, with clockSkew between clocks,
// so WaitingTTL lasts exactly that long from the moment every pod was seen on [B,A] (rule 2).
// Removing then drops A. A Secret-only keyring (no targets, no selected pods) has nothing to prove
// anything, so each of these phases instead waits spec.propagationDelay, the time the kubelet takes
// to refresh a mounted Secret.
//
// Each write is safe on its own, even for consumers that hot-reload the mounted file before their
// pod is replaced: [A,B] and [A,N] still seal with A; [B,A] and [N,A] are written only after every
// pod accepts B (N); [B] and [N,M] only after every token sealed with A has expired.
//
// # Revocation
//
// The mrtr.dev/revoke annotation holds revocation requests (key ids, or "*" for every key), which
// accumulate: every request not yet handled is acted on, however many were written while the
// operator was away, and recorded as handled: a numbered request ("7:KEYID", as kubectl mrtr
// revoke writes them) by the highest sequence handled (status.lastHandledRevokeSequence, and the
// Secret's HandledRevokeSequenceAnnotation), which lets the plugin prune handled requests and
// keeps one that GitOps puts back from being handled again; an unnumbered one by its text, for as
// long as the annotation holds it (status.lastHandledRevokeRequest, and the Secret's
// HandledRevokeAnnotation). So a request is handled once however many a keyring sees. The keys they name are removed at once, in any phase (suspended or
// stalled too), without the TTL wait: tokens sealed with them fail from then on, which is the
// point. A key any request names never seals: revocation comes before any other decision of the
// pass, a keyring taken as it is included, and a fresh key never takes a named id. A revoked
// primary is replaced in the same write by the key every pod is likeliest to accept (the staged
// key; else a retiring one; else the one on its way; else a fresh key, when every key is revoked,
// and then every token in flight fails); a revoked staged key by a fresh staged key. Only a staged
// or retiring key is on every pod: a successor that is not seals at once all the same, and the
// KeyRevoked event names that window (until every pod runs the new keyring, a pod without it
// refuses its tokens), because sealing on with the revoked key would keep a leaked key trusted. The
// phase becomes Revoking, which ends, like Removing, when every pod runs the new keyring; a
// rotation under way is abandoned (the next starts when due). Revoked ids are kept in
// status.revokedKeys and on the Secret (RevokedKeysAnnotation): a lost status, a re-created keyring
// or a Secret edited to hold a revoked key again never brings one back, and a fresh key never
// takes a revoked id. A request naming no key of the keyring is refused with a Warning event, once.
//
// # Crash safety
//
// All progress lives in status (phase, phaseStartedAt, ttlWaitUntil, fingerprints), so a restarted
// operator resumes mid-phase: the TTL wait keeps its end time, and workloads already stamped are not
// stamped again (a stamp equal to the template's is a no-op). The reconciler writes the Secret before
// status; if it stops in between, the Secret carries the phase and fingerprint of that write
// (annotations PhaseAnnotation and FingerprintAnnotation, with StagedKeyAnnotation and the
// revocations), and Step resumes in that phase instead of taking the write for a change made behind
// its back.
//
// # Places: one keyring across namespaces
//
// A ClusterMRTRKeyring's consumers read copies of its Secret, one in each namespace it selects
// (Input.Places); its Input.Secret is the lead Secret, in the operator's namespace, which no tenant
// writes. The phase machine is the same; places.go holds the rules that places add: a phase that
// waits for its keyring to reach every pod also waits for every copy to hold it, and a pod counts
// by the write of its own place's copy; the copies behind are written after the lead Secret and
// the status (Decision.CopyTo), so a pass killed between two copy writes resumes from the lead
// Secret and writes exactly those still behind; a Secret there that is not the keyring's copy is
// never written, and a namespace being deleted or no longer selected never holds a phase.
//
// # When the world is not as written
//
//   - Secret absent, never written: created with a fresh primary key and, when nextKey is Staged,
//     a fresh staged key (Stable).
//   - Secret absent after we wrote it (deleted behind our back): its keys are gone (status holds no
//     bytes), so it is recreated with a fresh key and rolled out at once: the running pods keep the
//     old keys until replaced, and new pods could not start at all without a Secret. Tokens in flight
//     across the rollout are lost; nothing else can keep more of them.
//   - Secret holds a valid keyring nobody wrote through us (adoption, or an edit behind our back): it
//     is taken as it is, never rewritten, and rolled out (Stable); keys after the first are Retiring
//     and leave at the next rotation's Removing, so no key anyone may seal with is dropped early.
//   - Secret holds something else (not a keyring, or the wrong type): Stalled, nothing is written
//     or stamped, the phase and its timers stay; it resumes once the Secret is fixed or deleted.
//   - A target is missing: reported (Ready=False); a rotation does not leave Accepting without it,
//     because it might start with an old keyring. In later phases a missing target has no pods that
//     could seal, so it does not block.
//   - A rollout exceeds spec.rolloutDeadline (in Reload delivery: not every pod runs the phase's
//     keyring by then, restarts included): Stalled naming the workload and its laggards; the phase
//     does not advance, and continues by itself once they catch up.
//   - A pod crashes mid-phase: its container starts again with the Secret as mounted now and
//     acknowledges that; until then its Pod shows what it acknowledged before, which is at most
//     what the kubelet had projected then. A pod that stops mid-phase stops counting once its Pod
//     is gone. An eviction a PodDisruptionBudget refuses is asked again on the next passes.
//   - spec.suspend: no rotation starts (neither due nor requested); one under way finishes.
//   - spec.rotationWindows (windows.go): a rotation due outside every window starts at the next
//     opening, which status.nextRotationTime shows; one that started inside a window finishes
//     after it closes, since only leaving Stable waits for a window. A request (mrtr.dev/rotate)
//     and a revocation never wait: whoever asks has decided that now is the time, and a revoked
//     key must go at once. Windows the parser refuses hold scheduled rotations back, Stalled
//     naming the field; no window within rotationInterval of the due time is the
//     RotationWindowWarning condition.
//   - spec.tokenTTL (or clockSkew, terminationGracePeriod) raised: a server may now seal tokens
//     that live longer, so status.ttlWaits keeps the longest TTL wait declared while each key
//     sealed, and the wait before the old keys' removal lasts at least the longest declared since
//     they began to seal: raised during WaitingTTL, the wait is extended (event TTLWaitExtended);
//     lowered, it is never shortened.
//   - The consumers are the workloads listed or selected and every workload of the namespace whose
//     pod template references the Secret (the reconciler finds them by an index): a workload that
//     mounts the keyring is gated whether or not anyone listed it, or after it was unlisted.
//   - Two keyrings, one object: a Secret belongs to the keyring that labelled it
//     (mrtr.dev/keyring), a workload's stamp to the keyring named by its mrtr.dev/stamped-by
//     annotation, as long as that keyring exists. Another keyring that claims either touches it
//     not at all and is Stalled (Conflict) naming the owner; it takes over once the owner is gone.
//     A workload annotated mrtr.dev/keyrings: a,b is shared: each keyring listed has a stamp of
//     its own (a in mrtr.dev/keyring-hash, b in keyring-hash.mrtr.dev/b), none fought over. In
//     Reload delivery nothing is stamped and each keyring waits for the acknowledgement of its own
//     Secret: two keyrings of one workload never touch the same thing.
//   - A keyring deleted and re-created with a mrtr.dev/rotate value already handled for its
//     Secret: the Secret records the last handled value (HandledRotateAnnotation), so it starts no
//     second rotation.
//   - spec.rotationInterval edited: the next rotation is due one new interval after the last
//     rotation (before the first, after the primary key was created), at once (event
//     RotationRescheduled).
package rotation
