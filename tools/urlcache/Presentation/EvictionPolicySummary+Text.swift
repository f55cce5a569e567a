import CacheMaintenance

extension EvictionPolicySummary: TextReport {
    var text: String {
        TextFormat.pairs([("directory", directory), ("eviction policy", policy.rawValue)])
    }
}
