import type { Migration } from './index'

/** The first schema as it shipped; a migration never changes once released. */
const INITIAL_SCHEMA = `
      CREATE TABLE products (
        id TEXT PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        price_sats INTEGER NOT NULL DEFAULT 0 CHECK (price_sats >= 0),
        entitlements_catalog TEXT NOT NULL DEFAULT '[]',
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      CREATE TABLE policies (
        id TEXT PRIMARY KEY,
        product_id TEXT NOT NULL REFERENCES products(id),
        slug TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        price_sats_override INTEGER CHECK (price_sats_override IS NULL OR price_sats_override >= 0),
        entitlements TEXT NOT NULL DEFAULT '[]',
        max_machines INTEGER NOT NULL DEFAULT 1 CHECK (max_machines >= 0),
        duration_days INTEGER NOT NULL DEFAULT 0 CHECK (duration_days >= 0),
        grace_period_days INTEGER NOT NULL DEFAULT 7 CHECK (grace_period_days >= 0),
        is_trial INTEGER NOT NULL DEFAULT 0 CHECK (is_trial IN (0, 1)),
        highlighted INTEGER NOT NULL DEFAULT 0 CHECK (highlighted IN (0, 1)),
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (product_id, slug)
      );

      CREATE TABLE licenses (
        id TEXT PRIMARY KEY,
        product_id TEXT NOT NULL REFERENCES products(id),
        policy_id TEXT REFERENCES policies(id),
        invoice_id TEXT UNIQUE REFERENCES invoices(id),
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'revoked')),
        status_reason TEXT,
        source TEXT NOT NULL CHECK (source IN ('purchase', 'complimentary', 'redeem')),
        license_key TEXT NOT NULL,
        issued_at INTEGER NOT NULL,
        expires_at INTEGER,
        grace_period_days INTEGER NOT NULL DEFAULT 7 CHECK (grace_period_days >= 0),
        max_machines INTEGER NOT NULL DEFAULT 1 CHECK (max_machines >= 0),
        entitlements TEXT NOT NULL DEFAULT '[]',
        is_trial INTEGER NOT NULL DEFAULT 0 CHECK (is_trial IN (0, 1)),
        fingerprint_hash TEXT CHECK (fingerprint_hash IS NULL OR length(fingerprint_hash) = 64),
        buyer_email TEXT,
        buyer_note TEXT,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX licenses_product ON licenses (product_id, issued_at);
      CREATE INDEX licenses_email ON licenses (buyer_email);

      CREATE TABLE machines (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        fingerprint_hash TEXT NOT NULL CHECK (length(fingerprint_hash) = 64),
        hostname TEXT,
        platform TEXT,
        last_ip TEXT,
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
        activated_at INTEGER NOT NULL,
        last_heartbeat_at INTEGER NOT NULL,
        deactivated_at INTEGER,
        deactivation_reason TEXT
      );
      CREATE UNIQUE INDEX machines_active_fp ON machines (license_id, fingerprint_hash) WHERE status = 'active';
      CREATE INDEX machines_license ON machines (license_id, status);

      CREATE TABLE discount_codes (
        id TEXT PRIMARY KEY,
        code TEXT NOT NULL UNIQUE COLLATE NOCASE,
        kind TEXT NOT NULL CHECK (kind IN ('percent', 'fixed_sats', 'set_price', 'free_license')),
        value INTEGER NOT NULL DEFAULT 0 CHECK (value >= 0),
        product_id TEXT REFERENCES products(id),
        policy_id TEXT REFERENCES policies(id),
        max_redemptions INTEGER CHECK (max_redemptions IS NULL OR max_redemptions >= 0),
        redemption_count INTEGER NOT NULL DEFAULT 0 CHECK (redemption_count >= 0),
        expires_at INTEGER,
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        note TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        CHECK (kind <> 'percent' OR value BETWEEN 1 AND 100)
      );

      CREATE TABLE invoices (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL DEFAULT 'purchase' CHECK (kind IN ('purchase', 'redeem', 'renewal', 'upgrade')),
        product_id TEXT NOT NULL REFERENCES products(id),
        policy_id TEXT REFERENCES policies(id),
        provider TEXT CHECK (provider IS NULL OR provider IN ('btcpay', 'zaprite', 'free')),
        provider_invoice_id TEXT,
        checkout_url TEXT,
        amount_sats INTEGER NOT NULL CHECK (amount_sats >= 0),
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'settled', 'expired', 'invalid')),
        discount_code_id TEXT REFERENCES discount_codes(id),
        buyer_email TEXT,
        buyer_note TEXT,
        redirect_url TEXT,
        issued_license_id TEXT UNIQUE REFERENCES licenses(id),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER,
        settled_at INTEGER
      );
      CREATE UNIQUE INDEX invoices_provider_ref ON invoices (provider, provider_invoice_id) WHERE provider_invoice_id IS NOT NULL;
      CREATE INDEX invoices_status ON invoices (status, created_at);
      CREATE INDEX invoices_product ON invoices (product_id, created_at);

      CREATE TABLE discount_redemptions (
        id TEXT PRIMARY KEY,
        discount_code_id TEXT NOT NULL REFERENCES discount_codes(id),
        invoice_id TEXT REFERENCES invoices(id),
        license_id TEXT REFERENCES licenses(id),
        buyer_email TEXT,
        redeemed_at INTEGER NOT NULL,
        UNIQUE (discount_code_id, invoice_id)
      );
      CREATE INDEX discount_redemptions_code ON discount_redemptions (discount_code_id, redeemed_at);

      CREATE TABLE audit_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        actor TEXT NOT NULL CHECK (actor IN ('admin', 'buyer', 'system', 'provider')),
        action TEXT NOT NULL,
        target_type TEXT,
        target_id TEXT,
        details TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX audit_log_at ON audit_log (at);
      CREATE INDEX audit_log_target ON audit_log (target_type, target_id);

      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );

      -- BTCPay Server (provider_a): one row or none.
      CREATE TABLE provider_a_config (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        base_url TEXT NOT NULL,
        api_key TEXT NOT NULL,
        store_id TEXT NOT NULL,
        webhook_id TEXT,
        webhook_secret TEXT,
        connected_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      -- Zaprite (provider_b): one row or none.
      CREATE TABLE provider_b_config (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        base_url TEXT NOT NULL,
        api_key TEXT NOT NULL,
        webhook_id TEXT,
        connected_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,
        events TEXT NOT NULL DEFAULT '["*"]',
        description TEXT NOT NULL DEFAULT '',
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        event TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        next_attempt_at INTEGER,
        last_attempt_at INTEGER,
        last_status_code INTEGER,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        delivered_at INTEGER
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
`

/** The first schema: SAT-only prices (price_sats), licenses, machines, invoices, discounts, providers, webhooks. */
export const m001Initial: Migration = {
  id: 1,
  name: 'initial',
  up(db) {
    db.exec(INITIAL_SCHEMA)
  },
}
