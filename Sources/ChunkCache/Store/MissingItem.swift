/// What an item the catalogue does not hold means (<doc:FileProviderRules#C2>).
///
/// `noSuchItem` makes the File Provider delete the user's copy of the item, so it is said only when the
/// authority over the domain's items has confirmed that the item is gone. A cache miss, a timeout or a
/// database error never reaches here: those are other codes, raised where they happen.
enum MissingItem {
    /// Who has the last word on whether an item of a domain exists.
    enum Authority: Sendable, Equatable {
        /// The domain has no origin: the store is its only copy, so the catalogue's answer is final.
        case store
        /// The domain names an origin: only the origin's 404 or 410 confirms an item gone.
        case origin
    }

    /// The authority over `domain`'s items: its origin when it names one (<doc:Contract#10-Origins-the-cold-path>),
    /// else the store.
    static func authority(of domain: DomainRecord) -> Authority { domain.origin == nil ? .store : .origin }

    /// The error for item `id`, which the catalogue of `domain` lacks, as its `authority` decides it.
    static func confirm(_ id: String, domain: String, authority: Authority) -> CacheError {
        switch authority {
        case .store:
            return CacheError(
                .noSuchItem,
                "there is no item \"\(id)\" in domain \"\(domain)\" (the store holds the domain's only copy); check the identifier"
            )
        case .origin:
            // Not noSuchItem: the store lacking the item says nothing about the origin (C2).
            return CacheError(
                .featureUnsupported,
                "item \"\(id)\" of domain \"\(domain)\" is not in the store yet, and asking its origin without fetching is not built in this version of chunkcache; fetch it (`chunkcache fetch --domain \(domain) \(id)`), which reads it from the origin"
            )
        }
    }
}
