/// Names an item: its domain and its identifier there (for imported files, the relative path).
public struct ItemIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// The domain the item belongs to.
    public var domain: String
    /// The identifier inside the domain.
    public var rawValue: String

    public init(domain: String, _ rawValue: String) {
        self.domain = domain
        self.rawValue = rawValue
    }

    public var description: String { "\(domain)/\(rawValue)" }
}
