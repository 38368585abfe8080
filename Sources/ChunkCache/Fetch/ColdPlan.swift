/// What a fetch of an origin domain serves once the store holds it: one version of the item and the range
/// retrieved from it, planned once and carried from the miss through the fill to the read.
struct ColdPlan: Sendable {
    let version: VersionRecord
    let range: ByteRange
    let item: ItemRecord
    let domainVersion: DomainVersion
    /// The domain's record the plan read: it names the origin, so the fill need not read it again. Nil when
    /// the plan came from a discovery or a read.
    var domain: DomainRecord?
}
