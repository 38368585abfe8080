import Foundation

/// What kind of item an identifier names.
public enum ItemKind: UInt8, Sendable, Codable {
    case file = 0
    case folder = 1
    case symlink = 2
}
