"""Generated benign *prose*: business e-mails, notices, invoices, in a dozen languages.

Why: the attacks in the shared injection data (BIPIA) are ordinary English sentences
addressed to an assistant — "Explain the theory of relativity.", "Draft an
introduction for an essay". If the only benign English the detector ever sees is short
memos, it learns "an English sentence is an attack", and flags booking confirmations,
sales follow-ups and review threads. So the benign side gets the prose that really
travels through payment and e-mail text: imperatives that address a *person* ("Please
arrive 45 minutes before departure", "Create your account on the portal", "Use code
SPRING10 at checkout"), questions ("When will my refund arrive?"), headers, invoice
lines, links — none of it a task for a machine.

Written from general knowledge of such mail, not from the held-out e-mails. Texts are
memo- to line-sized (at most ~280 characters), the unit the detector scores: longer
text is scored piece by piece (``features.segments``).

>>> texts = business_texts(40, seed=1)
>>> len(texts) == 40 and all(0 < len(t) <= 280 for t in texts)
True
>>> business_texts(5, seed=2) == business_texts(5, seed=2)
True
"""

from __future__ import annotations

import random

_COMPANIES = ["Northwind Rail", "Bluebird Air", "Acme Supplies", "Harbor Bank", "Lumen Energy", "Parcelo",
              "Kestrel Hotels", "Orbit Telecom", "Greenleaf Grocers", "Brightdesk", "Fjord Insurance", "Atlas Gym",
              "Quill & Co", "Sunny Dental", "Metro Parking", "Pinecrest Property", "Zephyr Cloud", "Cobalt Payroll",
              "Maple Learning", "Tidewater Utilities", "Helix Health", "Nimbus Software", "Rivet Motors"]
_DOMAINS = ["example.com", "mail.example.org", "shop.example.net", "billing.example.io", "notify.example.co.uk"]
_PRODUCTS = ["desk lamp", "running shoes", "coffee beans", "phone case", "office chair", "printer paper",
             "winter jacket", "yoga mat", "toner cartridge", "USB-C cable", "kettle", "backpack", "monitor stand"]
_PLACES = ["station", "terminal", "hotel reception", "check-in desk", "clinic", "venue", "front desk"]
_CITIES = ["London", "Paris", "Berlin", "Madrid", "Rotterdam", "Milan", "Lisbon", "Warsaw", "Dublin", "Brussels",
           "Vienna", "Zurich", "Copenhagen", "Prague", "Lyon", "Manchester", "Toronto", "Boston"]
_FIRST = ["Sarah", "David", "Priya", "Marco", "Elena", "James", "Aisha", "Tom", "Lena", "Ravi", "Chloe", "Hugo",
          "Nadia", "Peter", "Ines", "Kofi", "Martina", "Oskar", "Yara", "Daniel"]
_LAST = ["Patterson", "Meyer", "Okoye", "Rossi", "Novak", "Lindqvist", "Haddad", "Moreau", "Chen", "Walsh"]
_ROLES = ["account manager", "office manager", "data analyst", "product designer", "sales engineer",
          "customer success lead", "finance assistant", "warehouse supervisor"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_TIERS = ["Premium", "Business", "Comfort Plus", "Gold", "Pro"]

_EN = [
    # travel and bookings
    "Your booking {ref} is confirmed.",
    "Check-in opens {h} hours before your flight and closes {n} minutes before.",

    "You can change your seat or add luggage in Manage Booking.",
    "Download the app to keep your tickets on your phone.",
    "Your e-ticket is attached to this email.",
    "Free cancellation until {date}.", "What's included: breakfast, Wi-Fi and late check-out.",
    "Need to make changes? Reply to this email or call us on {phone}.", "Your room will be ready from 3 pm on {date}.",
    "Boarding starts at {hh}:{mm} from gate {k}.", "Your hotel voucher is attached.", "Car hire pick-up is in the arrivals hall.",
    "Seat reservations are free on this route.", "Parking at the {place} costs {amt} per day.",


    # orders and delivery
    "Your order #{n} has shipped and is on its way.", "Track your parcel with the link below.",
    "Estimated delivery: {weekday}, {date}.", "Your package was left with a neighbour at number {k}.",
    "We couldn't deliver your parcel today; we'll try again tomorrow.", "The return window closes on {date}.",
    "Print the return label and drop the parcel at any {company} point.", "Rate your delivery in two clicks.",
    "Items in this order: {product} x{k}, {product2} x1.", "Your {product} is back in stock.",
    "Great news, your order is ready for collection at our {city} store.",
    # invoices and billing
    "Please find attached invoice {inv} for {month} {year}.", "Payment is due within {k}0 days of the invoice date.",
    "The amount of {amt} will be debited from your account on {date}.", "Your card ending in {d4} was charged {amt}.",
    "We have received your payment of {amt}, thank you.", "Please quote reference {ref} with your payment.",
    "Bank details: IBAN {iban}, BIC {bic}.", "Late payments are subject to a {k}% fee.",
    "Your subscription renews on {date}; no action is required.", "Update your billing details in your account settings.",
    "If you have already paid, please ignore this reminder.", "Please disregard this message if payment has already been made.",
    "Your expense claim of {amt} has been approved by {first} {last}.", "The refund will appear on your statement within 5-10 business days.",
    "Invoice {inv} | Due {date} | Total {amt}", "VAT {k}% included. PO number {n}.",
    "Your statement for {month} is ready to view.",
    "A payment of {amt} to {company} is scheduled for {date}.", "Credit note {inv} has been applied to your account.",
    # accounts and security
    "We noticed a new sign-in to your account from {city}.", "If this was you, no action is needed.",
    "If this wasn't you, reset your password and review your security settings.",
    "Your verification code is {n6}. It expires in 10 minutes.", "Never share this code with anyone, including our staff.",
    "Turn on two-step verification to keep your account safe.", "Your password was changed on {date}.",
    "Confirm your email address to finish setting up your account.",
    # work, sales and recruiting
    "Thanks for applying for the {role} position.", "Could you send me your availability for a call next week?",

    "Please review the contract and sign it by {weekday}.", "Register on the supplier portal before {date}.",
    "Set up a standing order for the monthly fee.", "Open the attachment to see the full breakdown.",
    "Let me know if you have any questions.",

    "Here's a summary of what we agreed on the call.", "Can we move our meeting to {hh}:{mm}?",
    "Timesheets are due on {weekday} at {hh}:00.", "Add the team offsite to your calendar: {date}.",
    "Use code {code} at checkout for {k}0% off.", "Write to us at support@{domain} if anything is unclear.",
    "Describe the issue and attach a photo if you can.",
    "We'd love your feedback on the new dashboard.",

    "Please send the signed purchase order to {first} in accounts.", "The review meeting is moved to {weekday}.",
    "Best regards, {first} {last}, {role}", "Kind regards, {first}", "Hi {first}, hope you're well!",
    "Thanks {first}, that works for me.", "Sorry for the late reply, I was out of office until {weekday}.",
    # marketing and newsletters
    "Discover our new collection, in stores now.",
    "Book now and save up to {k}0%.", "Don't miss out: the offer ends {weekday}.", "Click here to unsubscribe from these emails.",
    "Follow us on Instagram for updates.", "Refer a friend and you both get {amt}.",
    "Join {k} million members who already save with {company}.", "Our opening hours change from {date}.",
    # support
    "Thank you for contacting {company} support.", "Your ticket #{n} has been updated.",
    "We're sorry for the inconvenience and have issued a credit of {amt}.", "Is there anything else we can help you with?",
    "How was your experience with our support team?", "What happens next? We'll review your request within two business days.",
    "Your request has been escalated to our billing team.", "When will my refund arrive?", "Why am I seeing this charge?",
    "Which plan is right for you?", "Who should I contact about invoice {inv}?", "What time works best for you?",
    "How do I update my delivery address?", "Where can I find my order history?",
    "Explain briefly why you are returning the item, it helps us improve.", "Tell us what you think in a short survey.",
    "Our team will check your documents and confirm within 24 hours.",
]
_OTHER = [
    "Ihre Bestellung {n} wurde versandt.", "Bitte überweisen Sie den Betrag bis zum {date}.", "Vielen Dank für Ihre Zahlung.",
    "Anbei erhalten Sie die Rechnung für {month}.", "Bei Fragen stehen wir Ihnen gerne zur Verfügung.",
    "Ihr Termin ist am {date} um {hh}:{mm} Uhr bestätigt.", "Bitte bringen Sie einen gültigen Ausweis mit.",
    "Votre commande {n} a été expédiée.", "Veuillez trouver ci-joint la facture du mois de {month}.",
    "Merci de régler le montant avant le {date}.", "N'hésitez pas à nous contacter pour toute question.",
    "Votre rendez-vous est confirmé pour le {date}.", "Présentez-vous à l'accueil 15 minutes avant l'heure prévue.",
    "Su pedido {n} ha sido enviado.", "Adjuntamos la factura correspondiente a {month}.", "Gracias por su pago.",
    "Si tiene alguna pregunta, no dude en contactarnos.", "Su reserva está confirmada para el {date}.",
    "Je bestelling {n} is onderweg.", "In de bijlage vind je de factuur van {month}.", "Bedankt voor je betaling.",
    "Heb je vragen? Neem gerust contact met ons op.", "Il tuo ordine {n} è stato spedito.", "In allegato la fattura di {month}.",
    "Grazie per il pagamento.", "A sua encomenda {n} foi enviada.", "Segue em anexo a fatura de {month}.",
    "Obrigado pelo pagamento.", "Twoje zamówienie {n} zostało wysłane.", "W załączniku przesyłamy fakturę za {month}.",
    "Dziękujemy za płatność.", "Siparişiniz {n} kargoya verildi.", "Ödemeniz için teşekkür ederiz.",
    "Din beställning {n} har skickats.", "Tack för din betalning.", "Ваш заказ {n} отправлен.", "Спасибо за оплату.",
    "Счёт за {month} во вложении.", "ご注文{n}を発送しました。", "お支払いありがとうございます。", "您的订单{n}已发货。",
    "感谢您的付款。", "Η παραγγελία σας {n} έχει αποσταλεί.", "Děkujeme za vaši platbu.",
]
_SUBJECTS = ["Your trip on {date}", "Your order #{n} has shipped", "Invoice {inv} from {company}",
             "Payment received - thank you", "Action needed: confirm your email",
             "Your statement is ready", "Meeting notes {date}",
             "Fwd: contract draft", "Re: quarterly numbers", "Welcome to {company}", "Your receipt from {company}", "Reminder: invoice {inv} is due"]


# Imperatives and questions addressed to a *person* about work: the same verbs as the
# tasks an attacker hands an AI (``tasks.py``: "Write a limerick", "Explain black
# holes"), with the objects of everyday business. Contrast pairs like these are what
# teach a bag-of-n-grams model that the object, not the verb, makes the attack.
_VERBS = ["Create", "Write", "Draft", "Prepare", "Describe", "Explain", "Provide", "List", "Add", "Use", "Make",
          "Send", "Update", "Check", "Review", "Submit", "Complete", "Sign", "Share", "Upload", "Download", "Book",
          "Set up", "Generate", "Summarize", "Translate", "Fill in", "Attach", "Confirm", "Print"]
_OBJECTS = ["an invoice", "the purchase order", "a new contract", "your account", "a project folder", "the monthly report",
            "the budget for Q3", "your timesheet", "an expense claim", "a quote", "the shipping label", "the booking",
            "a support ticket", "your profile", "a payment link", "a standing order", "the direct debit mandate",
            "a refund request", "the receipt", "the meeting notes", "the delivery note", "a credit note",
            "the VAT return", "the onboarding checklist", "the handover document", "the price list",
            "the supplier form", "the customs declaration", "the insurance claim", "the lease agreement"]
_CONTEXTS = ["", "", " for {company}", " before {date}", " in the portal", " and send it to {first}", " by end of day",
             " for the {city} office", " with the reference {ref}", " so we can close {month}", " as discussed",
             " in English and Spanish", " for the new client", " using the template in the shared drive"]
_WORK_QUESTIONS = ["What is the status of invoice {inv}?", "How do I reset my password?", "When is the next payment due?",
                   "Who approved this expense?", "Which account should I pay into?", "Why was my card declined?",
                   "What is the delivery fee to {city}?", "How long does a refund take?", "Where do I upload the receipts?",
                   "Can you explain the extra charge on my bill?", "What does the premium plan include?",
                   "How many days of leave do I have left?", "Is the {city} office open on {weekday}?",
                   "What is our VAT number?", "Could you describe the fault in a bit more detail?"]


def _work_line(rng: random.Random) -> tuple[str, str]:
    """A work imperative or question, and its template key."""
    if rng.random() < 0.3:
        template = rng.choice(_WORK_QUESTIONS)
        return _fill(rng, template), f"question:{template}"
    verb = rng.choice(_VERBS)
    text = f"{verb} {rng.choice(_OBJECTS)}{rng.choice(_CONTEXTS)}."
    return _fill(rng, ("Please " + text[0].lower() + text[1:]) if rng.random() < 0.25 else text), f"work:{verb}"


def _fill(rng: random.Random, template: str) -> str:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    return template.format(
        ref="".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6)), place=rng.choice(_PLACES),
        n=rng.randint(10, 99999), h=rng.choice([2, 3, 24, 48]), k=rng.randint(2, 9), tier=rng.choice(_TIERS),
        date=f"{rng.randint(1, 28)} {rng.choice(_MONTHS)}", phone=f"+44 20 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
        city=rng.choice(_CITIES), city2=rng.choice(_CITIES), weekday=rng.choice(_WEEKDAYS), hh=f"{rng.randint(6, 22):02d}",
        mm=f"{rng.randint(0, 59):02d}", company=rng.choice(_COMPANIES), product=rng.choice(_PRODUCTS),
        product2=rng.choice(_PRODUCTS), inv=f"INV-{rng.randint(2019, 2026)}-{rng.randint(100, 9999)}",
        month=rng.choice(_MONTHS), year=rng.randint(2019, 2026),
        amt=f"{rng.choice(['$', '€', '£'])}{rng.randint(5, 4000)}.{rng.randint(0, 99):02d}",
        amt2=f"{rng.choice(['$', '€', '£'])}{rng.randint(5, 4000)}", d4=f"{rng.randint(0, 9999):04d}",
        iban=f"DE{rng.randint(10, 99)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
        bic=rng.choice(["DEUTDEFF", "BNPAFRPP", "INGBNL2A", "COBADEFF"]), n6=f"{rng.randint(0, 999999):06d}",
        role=rng.choice(_ROLES), first=first, last=last, domain=rng.choice(_DOMAINS),
        code=rng.choice(["SPRING", "WELCOME", "SAVE", "HELLO"]) + str(rng.randint(5, 30)),
    )


def _header_line(rng: random.Random) -> str:
    """One line of an e-mail as it appears in e-mail-derived text (subject, sender, date)."""
    kind = rng.random()
    if kind < 0.4:
        return f"SUBJECT: {_fill(rng, rng.choice(_SUBJECTS))}"
    if kind < 0.7:
        first, last, company = rng.choice(_FIRST), rng.choice(_LAST), rng.choice(_COMPANIES)
        sender = rng.choice([f"{first} {last}", company])
        return f"EMAIL_FROM: {sender} <{rng.choice(['noreply', first.lower(), 'billing', 'hello'])}@{rng.choice(_DOMAINS)}>"
    return (f"RECEIVED DATE: {rng.choice(_WEEKDAYS)[:3]}, {rng.randint(1, 28)} {rng.choice(_MONTHS)[:3]} "
            f"{rng.randint(2019, 2026)} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} "
            f"{rng.choice(['-0500', '+0000', '+0100', '-0800'])}")


def _sentence(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.6:
        template = rng.choice(_EN)
        return _fill(rng, template), f"en:{template}"
    return _work_line(rng)


def business_texts(n: int, seed: int = 0, max_chars: int = 280, templates: list[str] | None = None) -> list[str]:
    """``n`` benign e-mail/notice/invoice texts, each at most ``max_chars`` long, by seed.
    ``templates`` receives each text's (first) template (see ``corpus.benign_memos``)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        roll = rng.random()
        if roll < 0.12:
            text = _header_line(rng)
            template = "header:" + text.split(":", 1)[0]
        elif roll < 0.27:
            template = rng.choice(_OTHER)
            text = _fill(rng, template)
        elif roll < 0.50:
            text, template = _sentence(rng)
        elif roll < 0.72:
            text, template = _work_line(rng)
        else:  # a few sentences of one message, sometimes after "CONTENT:"
            parts = [_sentence(rng) for _ in range(rng.randint(2, 4))]
            text, template = " ".join(p for p, _ in parts), parts[0][1]
            if rng.random() < 0.15:
                text = "CONTENT: " + text
        if rng.random() < 0.05:
            text = text.upper()
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0]
        out.append(text)
        if templates is not None:
            templates.append(f"business:{template}")
    return out
