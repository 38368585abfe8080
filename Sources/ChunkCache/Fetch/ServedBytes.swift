import FileIO
import Foundation
import OriginKit

/// The bytes a fetch served, for the read-ahead that follows it.
protocol ServedBytes {
    var servedItem: Item { get }
    var servedRange: Range<Int64> { get }
    /// Served from an origin domain: only those have read-ahead.
    var fromOriginDomain: Bool { get }
}

extension FetchResult: ServedBytes {
    var servedItem: Item { item }
    var servedRange: Range<Int64> { retrievedRange.location..<retrievedRange.end }
}
