/// A domain's version: a counter that only grows, bumped by every change to the domain's items.
public struct DomainVersion: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    /// The counter.
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The first version of a new domain.
    public static let initial = DomainVersion(rawValue: 1)

    /// The version that follows this one, as `NSFileProviderDomainVersion.next()`.
    public func next() -> DomainVersion { DomainVersion(rawValue: rawValue + 1) }

    public static func < (a: DomainVersion, b: DomainVersion) -> Bool { a.rawValue < b.rawValue }

    /// Decimal digits, as the CLI prints it.
    public var description: String { String(rawValue) }
}
