import CacheMaintenance

extension URLOrderSummary: TextReport {
    var text: String {
        TextFormat.pairs([
            ("directory", directory),
            ("url order", kept ? "kept" : "not kept"),
            ("complete", kept ? (complete ? "yes" : "no (an earlier release wrote; urlcache verify --fix)") : "-"),
        ])
    }
}
