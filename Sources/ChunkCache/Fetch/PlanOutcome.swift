/// What planning a fetch decided
/// (``FetchPlanner/plan(store:domain:item:requested:minimal:alignment:options:request:in:)``): the plan that serves it
/// from the store, or what the store lacks, which only an origin domain's fetch can fill
/// (<doc:Contract#10-Origins-the-cold-path>).
enum PlanOutcome: Sendable {
    case serve(FetchPlan)
    case miss(Absence)

    /// What is absent, when the plan missed.
    var missing: Absence? {
        if case .miss(let absence) = self { absence } else { nil }
    }
}
